import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Webhooks (issue 22): endpoints that receive the event log's events, at least once.
 *   - `webhooks.position`: how far in the organization's event log the endpoint's deliveries were made (an
 *     event id, as readers resume after). A node moves it and inserts the deliveries of the events it passed in
 *     one statement, only if it still holds the position it read from: the deliveries of an event are made once
 *     whichever node reads it, and a node killed between the read and the statement leaves nothing half-done.
 *   - `webhook_deliveries`: the outbox. One row per (endpoint, event), with the body as first sent (the id it is
 *     sent under, `webhook-id`, and the body never change between attempts). A node sending it holds a lease
 *     (`lease_until`, renewed while it holds the row): a killed node's deliveries come back to every node when it
 *     runs out. Nodes claim due rows by the partial index with `FOR UPDATE SKIP LOCKED`.
 *   - `webhook_attempts`: each attempt, for `GET /v1/webhooks/{id}/deliveries`.
 * Secrets are sealed (AES-256-GCM, src/connectors/CredentialVault.ts), the previous one kept until it expires.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhooks (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      url text NOT NULL,
      description text NOT NULL DEFAULT '',
      event_types text[] NOT NULL DEFAULT '{}',
      enabled boolean NOT NULL,
      disabled_reason text,
      secret bytea NOT NULL,
      secret_key_version int NOT NULL,
      previous_secret bytea,
      previous_secret_key_version int,
      previous_secret_expires_at timestamptz,
      position bigint NOT NULL,
      last_success_at timestamptz,
      created_by uuid,
      created_by_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhooks_organization ON webhooks (organization_id, created_at, id)`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL,
      event_id bigint,
      event_type text NOT NULL,
      body text NOT NULL,
      status text NOT NULL,
      attempts int NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      lease_owner text,
      first_attempt_at timestamptz,
      -- milliseconds: the listing's cursor holds them as an ISO instant
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      delivered_at timestamptz,
      UNIQUE (webhook_id, event_id)
    )`
  // the due ones: few at any time (the rest are done), read by every node's claim
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, created_at DESC, id DESC)`
  // retention deletes by time
  yield* sql`CREATE INDEX webhook_deliveries_created ON webhook_deliveries USING brin (created_at)`
  yield* sql`
    CREATE TABLE webhook_attempts (
      delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      attempt int NOT NULL,
      at timestamptz NOT NULL,
      status_code int,
      latency_ms float8 NOT NULL,
      response_excerpt text,
      error text,
      PRIMARY KEY (delivery_id, attempt)
    )`
})

import { type Role, roleAtLeast } from "./Identity.js"

/**
 * A thing a caller may do, and the weakest role that may do it. `action` finishes the refusal the server
 * sends ("Only Builder and above may <action>") and names the permission in the document.
 */
export interface Permission {
  readonly role: Role
  readonly action: string
}

const at = (role: Role, action: string): Permission => ({ role, action })

/**
 * Who may do what: the one table the server enforces (`requirePermission`, `holds`) and the OpenAPI document
 * shows (each operation's `permission` in schema/OperationDoc.ts renders its role). Change a role here and
 * both move; test/openapi/Roles.test.ts calls each operation with the role below and expects this table's
 * refusal. Rules beyond the role (owners, personal keys, keys limited to agents) live with the services.
 */
export const Policy = {
  /** Any member: the reads and the calls every person of the organization makes. */
  anyMember: at("member", "use this organization's API"),

  // members, keys, groups, single sign-on
  listMembers: at("admin", "list members"),
  addMembers: at("admin", "add members"),
  changeMemberRoles: at("admin", "change members' roles"),
  removeMembers: at("admin", "remove members"),
  createOrganizationKeys: at("admin", "create organization keys"),
  issueKeysForOthers: at("admin", "issue keys for other members"),
  manageEveryKey: at("admin", "see and revoke every member's keys"),
  manageEveryAuthorization: at("admin", "see and revoke other members' MCP authorizations"),
  manageGroups: at("admin", "manage groups"),
  manageSingleSignOn: at("admin", "manage single sign-on"),

  // agents, tasks, model providers
  createAgents: at("builder", "create agents"),
  changeAgents: at("builder", "change agents"),
  deleteAgents: at("builder", "delete agents"),
  cancelOthersTasks: at("builder", "cancel tasks other members invoked"),
  configureModelProviders: at("admin", "configure model providers"),
  readEveryonesUsage: at("admin", "read other members' usage"),

  // connectors and connections
  addConnectors: at("builder", "add connectors"),
  changeConnectors: at("builder", "change connectors"),
  removeConnectors: at("builder", "remove connectors"),
  createOrganizationalConnections: at("builder", "create organizational connections"),
  manageOrganizationalConnections: at("builder", "manage organizational connections"),

  // skills and approvals
  createSkills: at("builder", "create skills"),
  publishManifests: at("builder", "publish skills from a manifest"),
  publishSkills: at("admin", "publish skills"),
  manageEverySkill: at("admin", "see and change every skill"),
  addSkillsToAgents: at("builder", "add skills to agents"),
  readSkillViolations: at("admin", "read skill violations"),
  listApprovals: at("admin", "list approval requests"),
  approveToolCalls: at("admin", "approve tool calls"),
  rejectToolCalls: at("admin", "reject tool calls"),

  // schedules
  createSchedules: at("builder", "create schedules"),
  changeSchedules: at("builder", "change schedules"),
  pauseSchedules: at("builder", "pause schedules"),
  resumeSchedules: at("builder", "resume schedules"),
  deleteSchedules: at("builder", "delete schedules"),
  triggerSchedules: at("builder", "trigger schedules"),

  // workspace
  uploadFiles: at("builder", "upload files"),
  writeFiles: at("builder", "write files"),
  deleteFiles: at("builder", "delete files"),
  createFunctions: at("builder", "create functions"),
  changeFunctions: at("builder", "change functions"),
  deleteFunctions: at("builder", "delete functions"),
  attachFunctions: at("builder", "attach functions to agents"),
  detachFunctions: at("builder", "detach functions from agents"),
  createKnowledgeBases: at("builder", "create knowledge bases"),
  changeKnowledgeBases: at("builder", "change knowledge bases"),
  deleteKnowledgeBases: at("builder", "delete knowledge bases"),
  addDocuments: at("builder", "add documents"),
  deleteDocuments: at("builder", "delete documents"),
  attachKnowledgeBases: at("builder", "attach knowledge bases"),
  detachKnowledgeBases: at("builder", "detach knowledge bases"),
  changeCommandPolicies: at("builder", "change command policies"),

  // audit and webhooks
  readAuditLog: at("admin", "read the audit log"),
  exportAuditLog: at("admin", "export the audit log"),
  createWebhooks: at("admin", "create webhooks"),
  readWebhooks: at("admin", "read webhooks"),
  changeWebhooks: at("admin", "change webhooks"),
  deleteWebhooks: at("admin", "delete webhooks"),
  rotateWebhookSecrets: at("admin", "rotate webhook secrets"),
  pingWebhooks: at("admin", "ping webhooks"),
  retryWebhookDeliveries: at("admin", "retry webhook deliveries"),
  readWebhookDeliveries: at("admin", "read webhook deliveries")
} as const satisfies Record<string, Permission>

/** Whether a caller of `role` holds `permission`. */
export const holds = (role: Role, permission: Permission): boolean => roleAtLeast(role, permission.role)

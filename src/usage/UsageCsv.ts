import { formatTimestamp } from "../../schema/Timestamp.js"
import { USAGE_CSV_COLUMNS, type UsageRow } from "../../schema/Usage.js"
import { csvField } from "../audit/AuditReader.js"

/** The rows as RFC 4180 CSV with a header row (the audit export's quoting). */
export const usageCsv = (rows: ReadonlyArray<UsageRow>) =>
  [
    USAGE_CSV_COLUMNS.join(","),
    ...rows.map((row) =>
      USAGE_CSV_COLUMNS.map((column) => {
        const value = row[column]
        return csvField(value instanceof Date ? formatTimestamp(value) : value ?? null)
      }).join(",")
    )
  ].join("\r\n") + "\r\n"

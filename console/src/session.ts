import { createContext, useContext } from "react"
import type { Session } from "./api.js"

export const SessionContext = createContext<Session | null>(null)

/** The signed-in person (every page below the shell has one). */
export const useSession = (): Session => useContext(SessionContext)!

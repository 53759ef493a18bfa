import { Effect } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/** Where the identity provider sends the browser back: beside the sign-in page, on the app's origin. */
export const SSO_CALLBACK_PATH = "/oauth_login/sso/callback"

export const ssoRedirectUri = Effect.map(SwitchyardConfig, (config) => `${config.appBaseUrl}${SSO_CALLBACK_PATH}`)

/**
 * The "authorization request" a console sign-in through single sign-on carries instead of an MCP client's: the
 * callback then opens a console session and goes back to `/console`.
 */
export const CONSOLE_SSO_REQUEST = "console"

/** The cookie that binds the provider's answer to the browser that started: a callback without it is refused. */
export const ssoCookieName = (secure: boolean) => secure ? "__Host-sy_sso" : "sy_sso"

import { Effect } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/** Where the identity provider sends the browser back: beside the sign-in page, on the app's origin. */
export const SSO_CALLBACK_PATH = "/oauth_login/sso/callback"

export const ssoRedirectUri = Effect.map(SwitchyardConfig, (config) => `${config.appBaseUrl}${SSO_CALLBACK_PATH}`)

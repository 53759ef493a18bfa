/** An absolute http(s) URL: what every configurable base URL must be. */
export const isHttpUrl = (text: string): boolean => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol)

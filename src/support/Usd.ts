/**
 * An amount in USD to the 8 decimals the records keep (`numeric(…, 8)`): a sum of amounts read as floats shows
 * none of binary's noise (0.1 + 0.2 is 0.30000000000000004).
 */
export const roundUsd = (usd: number) => Math.round(usd * 1e8) / 1e8

/** Epoch milliseconds. Injected everywhere time matters so tests can cross windows and the sunset date. */
export type Clock = () => number;

export const systemClock: Clock = Date.now;

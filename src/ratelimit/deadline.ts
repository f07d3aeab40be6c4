/**
 * Settles like `promise`, or rejects once `ms` have passed without an answer. The deadline is judged only
 * after the event loop's poll phase has run (setImmediate after the timer): a reply Redis already sent but
 * our busy process had not yet read counts as an answer, so a burst of requests on this instance is not
 * mistaken for a slow Redis (which would switch it to in-process counting and break exact shared quotas).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const timer = setTimeout(
      () => setImmediate(() => settle(() => reject(new Error(`Redis did not answer within ${ms} ms`)))),
      ms,
    );
    promise.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error instanceof Error ? error : new Error(String(error)))),
    );
  });
}

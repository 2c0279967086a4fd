/** Lets the event loop run once: the floors' bare retry between two tries of a busy lock. */
export const yieldLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// A view model React reads through `useSyncExternalStore`: a version that
// every change bumps, and the listeners to tell. `subscribe` and `snapshot`
// are bound, so they can be handed to React as they are.

export class Store {
  constructor() {
    this.version = 0;
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    this.subscribe = this.subscribe.bind(this);
    this.snapshot = this.snapshot.bind(this);
  }

  /** @param {() => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  }

  snapshot() {
    return this.version;
  }

  changed() {
    this.version += 1;
    for (const fn of [...this.listeners]) fn();
  }
}

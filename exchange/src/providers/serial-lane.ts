// One thing at a time: what runs in the lane waits for what was put in it
// before, whether that succeeded or failed.

export class SerialLane {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const done = this.tail.then(work, work);
    this.tail = done.catch(() => undefined);
    return done;
  }
}

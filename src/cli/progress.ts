/** A one-line progress bar on stderr; silent when stderr is not a terminal or the job is small. */
export class ProgressBar {
  private readonly enabled: boolean;
  private lastDraw = 0;

  constructor(
    private readonly label: string,
    private readonly total: number,
    stream: NodeJS.WriteStream = process.stderr,
    minTotal = 1_000,
  ) {
    this.stream = stream;
    this.enabled = stream.isTTY === true && total >= minTotal;
  }

  private readonly stream: NodeJS.WriteStream;

  /** Redraws at most every 100 ms, and always at completion. */
  update(done: number): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (done < this.total && now - this.lastDraw < 100) return;
    this.lastDraw = now;
    const width = 30;
    const ratio = this.total === 0 ? 1 : Math.min(done / this.total, 1);
    const filled = Math.round(ratio * width);
    const bar = '#'.repeat(filled) + '.'.repeat(width - filled);
    this.stream.write(`\r${this.label} [${bar}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${this.total}`);
    if (done >= this.total) this.stream.write('\n');
  }
}

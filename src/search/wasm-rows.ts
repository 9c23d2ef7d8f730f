/** Bytes per WebAssembly memory page. */
const PAGE_BYTES = 65_536;

/**
 * Fixed-width rows in a WebAssembly memory of their own, scanned by kernels instantiated over that memory
 * (int8-scan.ts, sign-bits.ts): the memory, the room reserved in rows, and how the memory grows.
 */
export abstract class WasmRows {
  /** The memory the kernels read; it exists before a subclass instantiates a kernel over it. */
  protected readonly memory = new WebAssembly.Memory({ initial: 1 });
  /** Rows there is room for. */
  protected capacity = 0;

  /** Bytes of WebAssembly memory held (the rows and the scratch of the largest scan so far). */
  get byteLength(): number {
    return this.memory.buffer.byteLength;
  }

  /** Grows the memory to at least `bytes` (new pages hold zeros), then renews the views. */
  protected ensure(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE_BYTES));
    this.view();
  }

  /** Growing the memory replaces its buffer: the subclass's typed-array views follow it here. */
  protected abstract view(): void;
}

/**
 * The part of the WebAssembly JavaScript API that `int8-scan.ts` uses. Node has the API built in, but
 * @types/node 20 does not declare it and the DOM library would declare much else; these follow the
 * WebAssembly JavaScript Interface specification.
 */
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  function validate(bytes: Uint8Array): boolean;
}

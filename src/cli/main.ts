#!/usr/bin/env node
import { exitQuietlyOnBrokenPipe, reportAndExit } from './exit.js';
import { buildProgram } from './program.js';

exitQuietlyOnBrokenPipe();
buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => reportAndExit(err));

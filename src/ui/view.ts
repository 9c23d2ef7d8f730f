import type { ApiKey, Cairn } from '../cairn.js';
import type { AuthMode, Scope } from '../types.js';
import type { Html } from './layout.js';

/** What a view renders from: the façade, the request's scope and its query string. */
export type ViewContext = {
  cairn: Cairn;
  mode: AuthMode;
  scope: Scope;
  key: ApiKey | null;
  /** The request path, e.g. `/ui/memories`. */
  path: string;
  query: (name: string) => string | undefined;
  param: (name: string) => string;
};

/** A view: its `<title>` and the content of `<main>`. */
export type Rendered = { title: string; body: Html };
export type View = (v: ViewContext) => Promise<Rendered>;
/** Registers a view at a path under `/ui` (`/memories/:id`). */
export type AddView = (path: string, view: View) => void;

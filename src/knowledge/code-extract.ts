import { dirname, posix } from 'node:path';
import ts from 'typescript';
import type { CodeEdgeData, CodeEdgeKind, CodeExternalCall, CodeFileData, CodeSymbolData, CodeSymbolKind } from './code-symbols.js';

/**
 * Code graph extraction with the TypeScript compiler API (DESIGN.md, "Knowledge resources"): one Program
 * over every source file of the folder, a declaration pass over all files (AST only) and a reference pass
 * with the TypeChecker over the files that changed. Module resolution is confined to the folder: imports
 * of packages stay unresolved (recorded as external), which keeps indexing fast and the graph about the
 * project's own code.
 */

/** Declarations whose `name` is only their own name (a shorthand `{ x }` is not among them: it uses `x`). */
const NAMED_DECLARATIONS: ReadonlySet<ts.SyntaxKind> = new Set([
  ts.SyntaxKind.Parameter,
  ts.SyntaxKind.VariableDeclaration,
  ts.SyntaxKind.BindingElement,
  ts.SyntaxKind.PropertyAssignment,
  ts.SyntaxKind.PropertyDeclaration,
  ts.SyntaxKind.PropertySignature,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.MethodSignature,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.ClassExpression,
  ts.SyntaxKind.InterfaceDeclaration,
  ts.SyntaxKind.TypeAliasDeclaration,
  ts.SyntaxKind.EnumDeclaration,
  ts.SyntaxKind.EnumMember,
  ts.SyntaxKind.TypeParameter,
  ts.SyntaxKind.ModuleDeclaration,
]);

const HTTP_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'all']);
const MAX_SITES = 5;
const MAX_SIGNATURE = 200;
const MAX_DOC = 600;

/**
 * Extracts `targets` (relative paths) of the project made of `contents` (every source file by relative
 * path). Calls `onFile` after each target.
 */
export function extractCodeFiles(root: string, contents: ReadonlyMap<string, string>, targets: readonly string[], onFile?: (path: string) => void): Map<string, CodeFileData> {
  const program = createProgram(root, contents);
  const checker = program.getTypeChecker();
  const rootPrefix = `${toPosix(root).replace(/\/$/, '')}/`;
  const relOf = (sf: ts.SourceFile): string | null => {
    if (!sf.fileName.startsWith(rootPrefix)) return null;
    const rel = sf.fileName.slice(rootPrefix.length);
    return contents.has(rel) ? rel : null;
  };
  const declared = new Map<string, Declarations>();
  for (const sf of program.getSourceFiles()) {
    const rel = relOf(sf);
    if (rel !== null) declared.set(rel, declareFile(sf, rel));
  }
  const idOf = (decl: ts.Node): string | null => {
    const sf = decl.getSourceFile();
    const rel = relOf(sf);
    if (rel === null) return null;
    if (ts.isSourceFile(decl)) return rel;
    const byNode = declared.get(rel)!.byNode;
    const direct = byNode.get(decl);
    if (direct !== undefined || !isObjectMember(decl)) return direct ?? null;
    // Members of an object literal held by a module-level variable count as that variable.
    let node = decl.parent;
    while (ts.isObjectLiteralExpression(node) || isObjectMember(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node) || ts.isParenthesizedExpression(node)) {
      node = node.parent;
    }
    return byNode.get(node) ?? null;
  };
  const out = new Map<string, CodeFileData>();
  for (const rel of targets) {
    const sf = program.getSourceFile(`${rootPrefix}${rel}`);
    const decls = declared.get(rel);
    if (!sf || !decls) continue;
    out.set(rel, referenceFile(sf, rel, decls, checker, idOf, relOf));
    onFile?.(rel);
  }
  return out;
}

// ---- program ---------------------------------------------------------------------------------

type CachedSource = { text: string; key: string; sourceFile: ts.SourceFile };
// Parsed files survive between syncs (in the indexing worker) so a re-sync parses only what changed.
const sourceCache = new Map<string, CachedSource>();

function createProgram(root: string, contents: ReadonlyMap<string, string>): ts.Program {
  const options = compilerOptions(root);
  const rootPrefix = `${toPosix(root).replace(/\/$/, '')}/`;
  const projectText = (fileName: string): string | undefined => (fileName.startsWith(rootPrefix) ? contents.get(fileName.slice(rootPrefix.length)) : undefined);
  const host = ts.createCompilerHost(options, true);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => projectText(fileName) !== undefined || (!fileName.startsWith(rootPrefix) && fileExists(fileName));
  host.readFile = (fileName) => projectText(fileName) ?? readFile(fileName);
  host.getSourceFile = (fileName, languageVersionOrOptions) => {
    const text = projectText(fileName) ?? readFile(fileName);
    if (text === undefined) return undefined;
    const key =
      typeof languageVersionOrOptions === 'object'
        ? `${languageVersionOrOptions.languageVersion}:${languageVersionOrOptions.impliedNodeFormat ?? ''}`
        : String(languageVersionOrOptions);
    const cached = sourceCache.get(fileName);
    if (cached && cached.text === text && cached.key === key) return cached.sourceFile;
    const sourceFile = ts.createSourceFile(fileName, text, languageVersionOrOptions, true);
    sourceCache.set(fileName, { text, key, sourceFile });
    return sourceFile;
  };
  host.resolveModuleNameLiterals = (literals, containingFile, _redirect, resolveOptions) =>
    literals.map((literal) => {
      const resolved = ts.resolveModuleName(literal.text, containingFile, resolveOptions, host).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport || projectText(resolved.resolvedFileName) === undefined) return { resolvedModule: undefined };
      return { resolvedModule: resolved };
    });
  const rootNames = [...contents.keys()].map((rel) => `${rootPrefix}${rel}`);
  const program = ts.createProgram({ rootNames, options, host });
  for (const fileName of sourceCache.keys()) if (!program.getSourceFile(fileName)) sourceCache.delete(fileName);
  return program;
}

/** The nearest tsconfig.json's options (paths, jsx, module resolution), with Cairn's overrides for indexing. */
function compilerOptions(root: string): ts.CompilerOptions {
  let options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    jsx: ts.JsxEmit.Preserve,
    esModuleInterop: true,
  };
  const configPath = ts.findConfigFile(root, ts.sys.fileExists);
  if (configPath) {
    const read = ts.readConfigFile(configPath, ts.sys.readFile);
    if (!read.error) options = { ...options, ...ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(configPath)).options };
  }
  // No @types packages and no DOM: the graph is about the folder's code, and both cost seconds to load.
  return { ...options, allowJs: true, checkJs: false, noEmit: true, skipLibCheck: true, types: [], lib: ['lib.es2023.d.ts'], composite: false, incremental: false };
}

// ---- declaration pass (AST only, every file) -------------------------------------------------

type Declarations = { symbols: CodeSymbolData[]; byNode: Map<ts.Node, string>; classes: { node: ts.ClassLikeDeclaration; methods: { name: string; id: string }[] }[] };

function declareFile(sf: ts.SourceFile, rel: string): Declarations {
  const symbols: CodeSymbolData[] = [];
  const byId = new Map<string, CodeSymbolData>();
  const byNode = new Map<ts.Node, string>();
  const byQualified = new Map<string, CodeSymbolData>();
  const classes: Declarations['classes'] = [];
  const localExports = exportedLocalNames(sf);
  const lineOf = (pos: number) => sf.getLineAndCharacterOfPosition(pos);
  const fileSymbol: CodeSymbolData = {
    id: rel,
    name: posix.basename(rel),
    qualifiedName: rel,
    kind: 'file',
    line: 1,
    column: 1,
    endLine: lineOf(sf.end).line + 1,
    exported: true,
    signature: rel,
    doc: fileDoc(sf),
    container: null,
  };
  symbols.push(fileSymbol);
  byId.set(rel, fileSymbol);
  byNode.set(sf, rel);

  const declare = (node: ts.Node, name: string, kind: CodeSymbolKind, container: string | null, exported: boolean, mergeable: boolean): string => {
    const qualifiedName = container ? `${container}.${name}` : name;
    const existing = byQualified.get(qualifiedName);
    // Overloads and get/set pairs are one symbol, located at the implementation.
    if (existing && mergeable && existing.kind === kind) {
      byNode.set(node, existing.id);
      if (hasBody(node)) Object.assign(existing, location(node), { signature: signatureOf(node, sf) });
      return existing.id;
    }
    let id = `${rel}#${qualifiedName}`;
    for (let n = 2; byId.has(id); n++) id = `${rel}#${qualifiedName}~${n === 2 ? kind : n}`;
    const symbol: CodeSymbolData = { id, name, qualifiedName, kind, ...location(node), exported, signature: signatureOf(node, sf), doc: docOf(node), container };
    symbols.push(symbol);
    byId.set(id, symbol);
    if (!existing) byQualified.set(qualifiedName, symbol);
    byNode.set(node, id);
    return id;
  };
  const location = (node: ts.Node) => {
    const start = lineOf(node.getStart(sf));
    return { line: start.line + 1, column: start.character + 1, endLine: lineOf(node.end).line + 1 };
  };

  const declareClass = (node: ts.ClassLikeDeclaration, name: string, container: string | null, exported: boolean): void => {
    declare(node, name, 'class', container, exported, false);
    const qualified = container ? `${container}.${name}` : name;
    const methods: { name: string; id: string }[] = [];
    for (const member of node.members) {
      const memberName = member.name ? propertyName(member.name) : ts.isConstructorDeclaration(member) ? 'constructor' : null;
      if (memberName === null) continue;
      const isMethod =
        ts.isMethodDeclaration(member) ||
        ts.isConstructorDeclaration(member) ||
        ts.isGetAccessorDeclaration(member) ||
        ts.isSetAccessorDeclaration(member) ||
        (ts.isPropertyDeclaration(member) && member.initializer !== undefined && isFunctionValue(member.initializer));
      if (!isMethod) continue;
      const visible = exported && !hasModifier(member, ts.SyntaxKind.PrivateKeyword) && !(member.name && ts.isPrivateIdentifier(member.name));
      methods.push({ name: memberName, id: declare(member, memberName, 'method', qualified, visible, true) });
    }
    classes.push({ node, methods });
  };

  const visit = (node: ts.Node, container: string | null, inBody: boolean): void => {
    if (ts.isCallExpression(node)) {
      const route = routeOf(node);
      if (route) {
        const owner = enclosingDeclared(node, byNode, byId);
        byId.get(declare(node, route, 'route', null, true, false))!.container = owner;
      }
    }
    if (!inBody) {
      const exported = isExported(node, localExports);
      if (ts.isFunctionDeclaration(node)) {
        const name = node.name?.text ?? (hasModifier(node, ts.SyntaxKind.DefaultKeyword) ? 'default' : null);
        if (name) declare(node, name, 'function', container, exported, true);
      } else if (ts.isClassDeclaration(node)) {
        const name = node.name?.text ?? (hasModifier(node, ts.SyntaxKind.DefaultKeyword) ? 'default' : null);
        if (name) declareClass(node, name, container, exported);
      } else if (ts.isInterfaceDeclaration(node)) {
        declare(node, node.name.text, 'interface', container, exported, false);
        const qualified = container ? `${container}.${node.name.text}` : node.name.text;
        for (const member of node.members) {
          const isMethod = ts.isMethodSignature(member) || (ts.isPropertySignature(member) && member.type !== undefined && ts.isFunctionTypeNode(member.type));
          if (isMethod && member.name) declare(member, propertyName(member.name), 'method', qualified, exported, true);
        }
        return;
      } else if (ts.isTypeAliasDeclaration(node) || ts.isEnumDeclaration(node)) {
        declare(node, node.name.text, 'type', container, exported, false);
        return;
      } else if (ts.isVariableStatement(node)) {
        const statementExported = exported;
        for (const decl of node.declarationList.declarations) {
          if (!ts.isIdentifier(decl.name)) continue;
          const init = decl.initializer ? skipWrappers(decl.initializer) : undefined;
          if (init && ts.isClassExpression(init)) declareClass(init, decl.name.text, container, statementExported || localExports.has(decl.name.text));
          else declare(decl, decl.name.text, init && isFunctionValue(init) ? 'function' : 'variable', container, statementExported || localExports.has(decl.name.text), false);
        }
      } else if (ts.isModuleDeclaration(node) && node.body && ts.isIdentifier(node.name)) {
        const qualified = container ? `${container}.${node.name.text}` : node.name.text;
        ts.forEachChild(node.body, (child) => visit(child, qualified, false));
        return;
      }
    }
    const entersBody = ts.isFunctionLike(node) || ts.isClassLike(node) || ts.isVariableDeclaration(node) || ts.isClassStaticBlockDeclaration(node);
    ts.forEachChild(node, (child) => visit(child, container, inBody || entersBody));
  };
  ts.forEachChild(sf, (child) => visit(child, null, false));
  return { symbols, byNode, classes };
}

/** `GET /path` for `app.get('/path', handler)` and the like (Hono, Express, Fastify, routers). */
function routeOf(call: ts.CallExpression): string | null {
  if (!ts.isPropertyAccessExpression(call.expression) || call.arguments.length < 2) return null;
  const method = call.expression.name.text.toLowerCase();
  if (!HTTP_METHODS.has(method)) return null;
  const first = call.arguments[0]!;
  if (!ts.isStringLiteral(first) && !ts.isNoSubstitutionTemplateLiteral(first)) return null;
  if (!first.text.startsWith('/')) return null;
  const last = skipWrappers(call.arguments[call.arguments.length - 1]!);
  if (!isFunctionValue(last) && !ts.isIdentifier(last) && !ts.isPropertyAccessExpression(last) && !ts.isCallExpression(last)) return null;
  return `${method.toUpperCase()} ${first.text}`;
}

function enclosingDeclared(node: ts.Node, byNode: ReadonlyMap<ts.Node, string>, byId: ReadonlyMap<string, CodeSymbolData>): string | null {
  for (let n = node.parent; n && !ts.isSourceFile(n); n = n.parent) {
    const id = byNode.get(n);
    if (id !== undefined) return byId.get(id)?.qualifiedName ?? null;
  }
  return null;
}

// ---- reference pass (TypeChecker, changed files) ----------------------------------------------

function referenceFile(
  sf: ts.SourceFile,
  rel: string,
  decls: Declarations,
  checker: ts.TypeChecker,
  idOf: (decl: ts.Node) => string | null,
  relOf: (sf: ts.SourceFile) => string | null,
): CodeFileData {
  const edges = new Map<string, CodeEdgeData>();
  const external = new Map<string, CodeExternalCall>();
  const imports: CodeFileData['imports'] = [];
  const lineAt = (node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const addEdge = (from: string, to: string | null, kind: CodeEdgeKind, site: ts.Node, via?: string[]): void => {
    if (to === null || to === from) return;
    const key = `${from}\u0000${to}\u0000${kind}`;
    const edge = edges.get(key);
    const line = lineAt(site);
    if (edge) {
      if (edge.lines.length < MAX_SITES && !edge.lines.includes(line)) edge.lines.push(line);
      return;
    }
    edges.set(key, via && via.length > 0 ? { from, to, kind, lines: [line], via } : { from, to, kind, lines: [line] });
  };
  const targetOf = (symbol: ts.Symbol | undefined): string | null => {
    if (!symbol) return null;
    let resolved = symbol;
    if (resolved.flags & ts.SymbolFlags.Alias) resolved = checker.getAliasedSymbol(resolved);
    for (const decl of resolved.declarations ?? []) {
      const id = idOf(decl);
      if (id !== null) return id;
    }
    return null;
  };
  const moduleFile = (specifier: ts.Expression): string | null => {
    const symbol = checker.getSymbolAtLocation(specifier);
    const decl = symbol?.declarations?.find(ts.isSourceFile);
    return decl ? relOf(decl) : null;
  };

  const handleImport = (node: ts.ImportDeclaration): void => {
    if (!ts.isStringLiteral(node.moduleSpecifier)) return;
    const file = moduleFile(node.moduleSpecifier);
    imports.push({ specifier: node.moduleSpecifier.text, file });
    const clause = node.importClause;
    const names: ts.Identifier[] = [];
    if (clause?.name) names.push(clause.name);
    const bindings = clause?.namedBindings;
    if (!clause || (bindings && ts.isNamespaceImport(bindings))) {
      if (file !== null) addEdge(rel, file, 'imports', node);
    } else if (bindings) {
      for (const element of bindings.elements) names.push(element.name);
    }
    for (const name of names) {
      const alias = checker.getSymbolAtLocation(name);
      const to = targetOf(alias);
      if (to === null) continue;
      const targetFile = to.split('#')[0]!;
      const via = [...new Set([file, ...aliasChainFiles(alias!, checker, relOf)])].filter((f): f is string => f !== null && f !== targetFile && f !== rel);
      addEdge(rel, to, 'imports', name, via);
    }
  };

  const handleExport = (node: ts.ExportDeclaration): void => {
    const file = node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) ? moduleFile(node.moduleSpecifier) : null;
    if (node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) imports.push({ specifier: node.moduleSpecifier.text, file });
    if (!node.exportClause || ts.isNamespaceExport(node.exportClause)) {
      if (file !== null) addEdge(rel, file, 'exports', node);
      return;
    }
    for (const element of node.exportClause.elements) {
      const to = targetOf(checker.getExportSpecifierLocalTargetSymbol(element));
      // A local `export { x }` is the file's own symbol; only re-exports of other files are edges.
      if (to !== null && !to.startsWith(`${rel}#`)) addEdge(rel, to, 'exports', element);
    }
  };

  const handleIdentifier = (node: ts.Identifier | ts.PrivateIdentifier, owner: string, ownerNode: ts.Node | null): void => {
    // A declaration's own name refers to nothing else (and resolving a property name in an object literal
    // would type-check the literal); `{ x }` shorthand is a use of `x` and is resolved below.
    if (NAMED_DECLARATIONS.has(node.parent.kind) && (node.parent as ts.NamedDeclaration).name === node) return;
    let symbol = checker.getSymbolAtLocation(node);
    if (ts.isShorthandPropertyAssignment(node.parent) && node.parent.name === node) {
      symbol = checker.getShorthandAssignmentValueSymbol(node.parent) ?? symbol;
    }
    const to = targetOf(symbol);
    const callee = isCallee(node);
    if (to === null) {
      if (callee) recordExternal(node, owner);
      return;
    }
    const heritage = heritageKind(node);
    if (heritage) return addEdge(owner, to, heritage, node);
    // A handler passed straight to a route registration is called by the router.
    const routeArgument = ownerNode !== null && ts.isCallExpression(ownerNode) && node.parent === ownerNode && ownerNode.arguments.includes(node as ts.Identifier);
    addEdge(owner, to, callee || routeArgument ? 'calls' : 'references', node);
  };

  const recordExternal = (node: ts.Identifier | ts.PrivateIdentifier, owner: string): void => {
    const callee = calleeExpression(node);
    let root: ts.Expression = callee;
    // Only a plain path from the import (`z.object`, `fs.readFile`); a call on a call's result names no function of the package.
    while (ts.isPropertyAccessExpression(root)) root = root.expression;
    if (!ts.isIdentifier(root)) return;
    const alias = checker.getSymbolAtLocation(root);
    const decl = alias?.declarations?.[0];
    if (!decl || !(alias!.flags & ts.SymbolFlags.Alias)) return;
    const importDecl = findAncestor(decl, ts.isImportDeclaration);
    if (!importDecl || !ts.isStringLiteral(importDecl.moduleSpecifier) || moduleFile(importDecl.moduleSpecifier) !== null) return;
    const name = callee.getText(sf).replace(/\s+/g, '');
    const key = `${owner}\u0000${name}`;
    if (!external.has(key))
      external.set(key, { from: owner, name: name.length > 80 ? `${name.slice(0, 79)}…` : name, module: importDecl.moduleSpecifier.text, line: lineAt(node) });
  };

  const visit = (node: ts.Node, owner: string, ownerNode: ts.Node | null): void => {
    if (ts.isImportDeclaration(node)) return handleImport(node);
    if (ts.isExportDeclaration(node)) return handleExport(node);
    if (ts.isImportEqualsDeclaration(node)) return;
    const own = decls.byNode.get(node);
    const nextOwner = own ?? owner;
    const nextOwnerNode = own !== undefined ? node : ownerNode;
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) handleIdentifier(node, nextOwner, nextOwnerNode);
    else if (ts.isJsxOpeningElement(node) || ts.isJsxSelfClosingElement(node)) {
      if (ts.isIdentifier(node.tagName)) addEdge(nextOwner, targetOf(checker.getSymbolAtLocation(node.tagName)), 'calls', node.tagName);
    }
    ts.forEachChild(node, (child) => visit(child, nextOwner, nextOwnerNode));
  };
  ts.forEachChild(sf, (child) => visit(child, rel, null));

  // A method implementing an interface member or overriding a base method: callers through the
  // abstraction reach it (the impact tool follows these edges as dispatch).
  for (const { node, methods } of decls.classes) {
    for (const clause of node.heritageClauses ?? []) {
      const kind: CodeEdgeKind = clause.token === ts.SyntaxKind.ImplementsKeyword ? 'implements' : 'overrides';
      for (const typeNode of clause.types) {
        const type = checker.getTypeAtLocation(typeNode);
        for (const method of methods) {
          const property = type.getProperty(method.name);
          for (const decl of property?.declarations ?? []) addEdge(method.id, idOf(decl), kind, typeNode);
        }
      }
    }
  }

  const symbols = decls.symbols;
  return {
    kind: 'code',
    language: languageOf(rel),
    lines: symbols[0]!.endLine,
    symbols,
    edges: [...edges.values()],
    imports,
    external: [...external.values()],
  };
}

/** Files of the export specifiers an imported name passes through before reaching its declaration. */
function aliasChainFiles(alias: ts.Symbol, checker: ts.TypeChecker, relOf: (sf: ts.SourceFile) => string | null): (string | null)[] {
  const files: (string | null)[] = [];
  let current: ts.Symbol | undefined = alias;
  for (let hops = 0; current && current.flags & ts.SymbolFlags.Alias && hops < 10; hops++) {
    current = checker.getImmediateAliasedSymbol(current);
    const decl = current?.declarations?.[0];
    if (current && current.flags & ts.SymbolFlags.Alias && decl) files.push(relOf(decl.getSourceFile()));
  }
  return files;
}

function isCallee(node: ts.Node): boolean {
  const expression = calleeExpression(node);
  const parent = expression.parent;
  if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) return parent.expression === expression;
  if (ts.isTaggedTemplateExpression(parent)) return parent.tag === expression;
  return ts.isDecorator(parent);
}

/** The expression a name is the end of: `b` in `a.b` is `a.b`, otherwise the name itself. */
function calleeExpression(node: ts.Node): ts.Expression {
  const parent = node.parent;
  if (parent && ts.isPropertyAccessExpression(parent) && parent.name === node) return parent;
  return node as ts.Expression;
}

function heritageKind(node: ts.Node): CodeEdgeKind | null {
  let expression: ts.Node = node;
  while (ts.isPropertyAccessExpression(expression.parent) && expression.parent.name === expression) expression = expression.parent;
  const withArgs = expression.parent;
  if (!withArgs || !ts.isExpressionWithTypeArguments(withArgs) || !ts.isHeritageClause(withArgs.parent)) return null;
  return withArgs.parent.token === ts.SyntaxKind.ExtendsKeyword ? 'extends' : 'implements';
}

// ---- small AST readers -------------------------------------------------------------------------

function findAncestor<T extends ts.Node>(node: ts.Node, test: (n: ts.Node) => n is T): T | undefined {
  for (let n: ts.Node | undefined = node; n; n = n.parent) if (test(n)) return n;
  return undefined;
}

function isObjectMember(node: ts.Node): boolean {
  return ts.isPropertyAssignment(node) || ts.isMethodDeclaration(node) || ts.isShorthandPropertyAssignment(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node);
}

function skipWrappers(node: ts.Expression): ts.Expression {
  let current = node;
  while (ts.isParenthesizedExpression(current) || ts.isAsExpression(current) || ts.isSatisfiesExpression(current) || ts.isTypeAssertionExpression(current)) {
    current = current.expression;
  }
  return current;
}

function isFunctionValue(node: ts.Expression): boolean {
  const inner = skipWrappers(node);
  return ts.isArrowFunction(inner) || ts.isFunctionExpression(inner);
}

function hasBody(node: ts.Node): boolean {
  return (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) || ts.isPropertyDeclaration(node);
}

function hasModifier(node: ts.Node, kind: ts.SyntaxKind): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);
}

function isExported(node: ts.Node, localExports: ReadonlySet<string>): boolean {
  if (hasModifier(node, ts.SyntaxKind.ExportKeyword)) return true;
  const name = (node as { name?: ts.Node }).name;
  return name !== undefined && ts.isIdentifier(name) && localExports.has(name.text);
}

/** Names a file exports through `export { a, b as c }` or `export default a`. */
function exportedLocalNames(sf: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of sf.statements) {
    if (ts.isExportDeclaration(statement) && !statement.moduleSpecifier && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) names.add((element.propertyName ?? element.name).getText(sf));
    } else if (ts.isExportAssignment(statement) && ts.isIdentifier(statement.expression)) {
      names.add(statement.expression.text);
    }
  }
  return names;
}

function propertyName(name: ts.PropertyName): string {
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) return name.text;
  return name.getText();
}

function signatureOf(node: ts.Node, sf: ts.SourceFile): string {
  const start = node.getStart(sf);
  let end = node.end;
  let prefix = '';
  if (ts.isVariableDeclaration(node)) {
    const list = node.parent;
    prefix = list.flags & ts.NodeFlags.Const ? 'const ' : list.flags & ts.NodeFlags.Let ? 'let ' : 'var ';
    const init = node.initializer ? skipWrappers(node.initializer) : undefined;
    if (init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) end = init.body.getStart(sf);
  } else if (ts.isPropertyDeclaration(node) && node.initializer) {
    const init = skipWrappers(node.initializer);
    if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) end = init.body.getStart(sf);
  } else if (ts.isFunctionLike(node) && 'body' in node && node.body) {
    end = node.body.getStart(sf);
  } else if (ts.isClassLike(node) || ts.isInterfaceDeclaration(node) || ts.isEnumDeclaration(node)) {
    end = node.members.pos;
  } else if (ts.isCallExpression(node)) {
    const route = routeOf(node);
    if (route) return route;
  }
  const text = sf.text
    .slice(start, end)
    .replace(/\s+/g, ' ')
    .replace(/\s*[{;]\s*$/, '')
    .trim();
  return prefix + (text.length > MAX_SIGNATURE ? `${text.slice(0, MAX_SIGNATURE - 1)}…` : text);
}

function docOf(node: ts.Node): string {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const last = docs[docs.length - 1];
  const text = last ? (ts.getTextOfJSDocComment(last.comment) ?? '').trim() : '';
  return text.length > MAX_DOC ? `${text.slice(0, MAX_DOC - 1)}…` : text;
}

/** A leading `/** … *\/` block that documents the file rather than its first declaration. */
function fileDoc(sf: ts.SourceFile): string {
  const first = sf.statements[0];
  if (!first) return '';
  const ranges = ts.getLeadingCommentRanges(sf.text, 0) ?? [];
  const jsdoc = ranges.find((r) => sf.text.startsWith('/**', r.pos));
  // A single block right before the first statement documents that statement, not the file.
  if (!jsdoc || (ranges.length < 2 && docOf(first) !== '')) return '';
  const text = sf.text
    .slice(jsdoc.pos + 3, jsdoc.end - 2)
    .split('\n')
    .map((l) => l.replace(/^\s*\*\s?/, ''))
    .join('\n')
    .trim();
  return text.length > MAX_DOC ? `${text.slice(0, MAX_DOC - 1)}…` : text;
}

function languageOf(path: string): CodeFileData['language'] {
  const ext = posix.extname(path).toLowerCase();
  if (ext === '.tsx') return 'tsx';
  if (ext === '.jsx') return 'jsx';
  return ext === '.js' || ext === '.mjs' || ext === '.cjs' ? 'js' : 'ts';
}

function toPosix(path: string): string {
  return path.split('\\').join('/');
}

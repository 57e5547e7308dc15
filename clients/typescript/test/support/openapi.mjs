// Validates requests and answers against the OpenAPI document the server serves.
// The document: $RERUN_GATE_OPENAPI when set (`make test` writes the served one there), else test/openapi.json.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

export const DOCUMENT_PATH = process.env.RERUN_GATE_OPENAPI || fileURLToPath(new URL("../openapi.json", import.meta.url));

/** The document as read, untouched. */
export function loadDocument() {
  return JSON.parse(readFileSync(DOCUMENT_PATH, "utf8"));
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An ajv (draft 2020-12) instance with the whole document registered under the id `openapi.json`, so that
 * `#/components/schemas/...` refs resolve.
 */
export function makeValidator(doc = loadDocument()) {
  const document = structuredClone(doc);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat("int32", true);
  ajv.addFormat("int64", true);
  ajv.addFormat("date-time", (s) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)));
  ajv.addSchema(document, "openapi.json");

  const byPointer = new Map();
  const compile = (pointer) => {
    if (!byPointer.has(pointer)) {
      const fn = ajv.getSchema(`openapi.json#${pointer}`);
      if (!fn) throw new Error(`no schema at ${pointer} in ${DOCUMENT_PATH}`);
      byPointer.set(pointer, fn);
    }
    return byPointer.get(pointer);
  };
  const escape = (s) => s.replace(/~/g, "~0").replace(/\//g, "~1");
  const errorsOf = (fn) => (fn.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`);

  /** Validates `value` against components/schemas/<name>; answers the list of problems (empty: valid). */
  const schema = (name, value) => {
    const fn = compile(`/components/schemas/${escape(name)}`);
    return fn(value) ? [] : errorsOf(fn).map((e) => `${name}${e}`);
  };

  /** Validates against any JSON pointer into the document. */
  const at = (pointer, value) => {
    const fn = compile(pointer);
    return fn(value) ? [] : errorsOf(fn).map((e) => `${pointer}${e}`);
  };

  const operations = [];
  for (const [template, item] of Object.entries(document.paths ?? {})) {
    const names = [];
    const re = new RegExp(
      `^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{([^}]+)\}/g, (_, n) => {
        names.push(n);
        return "([^/]+)";
      })}$`,
    );
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      if (item[method]) operations.push({ template, method: method.toUpperCase(), re, names, op: item[method] });
    }
  }
  const find = (method, pathname) => {
    for (const o of operations) {
      const m = o.method === method && o.re.exec(pathname);
      if (m) return { ...o, params: Object.fromEntries(o.names.map((n, i) => [n, decodeURIComponent(m[i + 1])])) };
    }
    return undefined;
  };

  /** A request the kit sends: its operation, required headers, path parameters and JSON body. */
  const request = (method, url, headers, bodyText) => {
    const { pathname } = new URL(url, "http://x");
    const found = find(method, pathname);
    if (!found) return [`${method} ${pathname}: no such operation in the document`];
    const problems = [];
    const base = `/paths/${escape(found.template)}/${method.toLowerCase()}`;
    for (const [i, p] of (found.op.parameters ?? []).entries()) {
      let value;
      if (p.in === "header") value = headers[p.name.toLowerCase()];
      else if (p.in === "path") value = found.params[p.name];
      else continue;
      if (value === undefined) {
        if (p.required) problems.push(`${method} ${found.template}: required ${p.in} parameter ${p.name} missing`);
        continue;
      }
      if (p.schema) problems.push(...at(`${base}/parameters/${i}/schema`, value).map((e) => `${p.name}: ${e}`));
    }
    const content = found.op.requestBody?.content?.["application/json"];
    if (content?.schema) {
      let body;
      try {
        body = JSON.parse(bodyText ?? "");
      } catch {
        return [...problems, `${method} ${found.template}: the body is not JSON`];
      }
      problems.push(...at(`${base}/requestBody/content/application~1json/schema`, body));
    }
    return problems;
  };

  /** An answer (canned or from a fake): its status must be documented and its body match the schema. */
  const response = (method, url, status, contentType, bodyText) => {
    const { pathname } = new URL(url, "http://x");
    const found = find(method, pathname);
    if (!found) return [`${method} ${pathname}: no such operation in the document`];
    if ([502, 503, 504].includes(status)) return []; // a proxy's answer, not the server's: nothing documented
    const documented = found.op.responses?.[String(status)];
    if (!documented) return [`${method} ${found.template}: status ${status} is not documented`];
    const type = (contentType ?? "").split(";")[0].trim();
    const content = documented.content?.[type];
    if (!content) return documented.content ? [`${method} ${found.template} ${status}: content type '${type}' is not documented`] : [];
    if (type === "text/plain") return [];
    let body;
    try {
      body = JSON.parse(bodyText);
    } catch {
      return [`${method} ${found.template} ${status}: the body is not JSON`];
    }
    return at(`/paths/${escape(found.template)}/${method.toLowerCase()}/responses/${status}/content/${escape(type)}/schema`, body);
  };

  return { document, schema, at, request, response };
}

// docs/openapi.json, linted: a valid OpenAPI 3.1 document by @apidevtools/swagger-parser (the
// OpenAPI meta-schema, every $ref resolved), plus what the contract test relies on:
//   - the routes are src/executor/api.c's under /api/v1, with their methods, no more, no less;
//   - every operation has an operationId, an x-scope (none, read, submit, operate, admin) and
//     security that matches it, and 2xx and error answers with a JSON schema;
//   - every object schema with properties is closed (additionalProperties or
//     unevaluatedProperties false; an open base is named *Fields and is used only inside an
//     allOf of a closed one), so a field the C adds and the document lacks fails the contract;
//   - every schema compiles in Ajv's strict mode (JSON Schema 2020-12) and every example
//     validates against its schema.
// node lint.mjs DOC API_C; prints one line per finding and exits 1 on any.
import fs from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { openapiAjv } from './schemas.mjs';

const [docPath, apiC] = process.argv.slice(2);
const findings = [];
const find = (msg) => findings.push(msg);

try {
    await SwaggerParser.validate(JSON.parse(fs.readFileSync(docPath, 'utf8')));
} catch (e) {
    find(`swagger-parser: ${e.message}`);
}
const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));

// The routes of api.c: http_route(s, FLAGS, "/api/v1/...", ...) with HTTP_GET | HTTP_POST ...
const routes = new Map();
const src = fs.readFileSync(apiC, 'utf8');
for (const m of src.matchAll(/http_route\(s,\s*([^,]+),\s*"(\/api\/v1\/[^"]*)"/g)) {
    const path = m[2].replaceAll('{}', '{id}');
    const methods = [...m[1].matchAll(/HTTP_(GET|POST|PATCH|PUT|DELETE)/g)].map((x) => x[1].toLowerCase());
    routes.set(path, new Set(methods));
}
if (routes.size === 0) find(`no /api/v1 route found in ${apiC}`);
const METHODS = ['get', 'post', 'patch', 'put', 'delete'];
for (const [path, methods] of routes) {
    const item = doc.paths?.[path];
    if (!item) { find(`${path}: served (${apiC}) but not in the document`); continue; }
    for (const m of methods) if (!item[m]) find(`${m.toUpperCase()} ${path}: served but not in the document`);
}
for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of METHODS.filter((k) => item[k])) {
        const where = `${m.toUpperCase()} ${path}`;
        if (!routes.get(path)?.has(m)) find(`${where}: in the document but not served (${apiC})`);
        const op = item[m];
        if (!op.operationId) find(`${where}: no operationId`);
        const scopes = ['none', 'read', 'submit', 'operate', 'admin'];
        if (!scopes.includes(op['x-scope'])) find(`${where}: x-scope is not one of ${scopes.join(', ')}`);
        if (op['x-scope'] === 'none' && !(Array.isArray(op.security) && op.security.length === 0))
            find(`${where}: x-scope none needs "security": []`);
        const codes = Object.keys(op.responses ?? {});
        if (!codes.some((c) => c.startsWith('2'))) find(`${where}: no 2xx answer`);
        if (codes.includes('default')) find(`${where}: a default answer would let any status pass`);
        for (const c of codes) {
            let r = op.responses[c];
            if (r.$ref) r = doc.components.responses[r.$ref.split('/').pop()];
            if (!r?.content?.['application/json']?.schema) find(`${where} ${c}: no application/json schema`);
        }
    }
}

// Closed objects.
const users = new Map(); // schema name -> how it is referenced: "allOf" or "other"
const walk = (node, inAllOf) => {
    if (Array.isArray(node)) { node.forEach((n) => walk(n, inAllOf)); return; }
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
            const name = v.split('/').pop();
            if (!inAllOf) users.set(name, 'other');
            else if (!users.has(name)) users.set(name, 'allOf');
        } else walk(v, k === 'allOf');
    }
};
walk(doc, false);
const checkClosed = (node, where) => {
    if (Array.isArray(node)) { node.forEach((n, i) => checkClosed(n, `${where}/${i}`)); return; }
    if (!node || typeof node !== 'object') return;
    if (node.properties && !where.match(/^#\/components\/schemas\/[A-Za-z]+Fields$/) &&
        node.additionalProperties !== false && node.unevaluatedProperties !== false &&
        !where.endsWith('/allOf/1'))
        find(`${where}: an object with properties must have additionalProperties: false`);
    if (node.allOf && node.unevaluatedProperties !== false && node.properties === undefined)
        find(`${where}: an allOf must have unevaluatedProperties: false`);
    for (const [k, v] of Object.entries(node)) if (k !== 'examples' && k !== 'example') checkClosed(v, `${where}/${k}`);
};
for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) {
    checkClosed(s, `#/components/schemas/${name}`);
    if (name.endsWith('Fields') && users.get(name) === 'other')
        find(`#/components/schemas/${name}: an open base, referenced outside an allOf`);
}
for (const [path, item] of Object.entries(doc.paths ?? {}))
    checkClosed(item, `#/paths/${path}`);

// Examples.
const ajv = openapiAjv(doc);
const checkExamples = (schema, examples, where) => {
    let validate;
    try { validate = ajv.compileFor(schema); } catch (e) { find(`${where}: ${e.message}`); return; }
    for (const ex of examples) if (!validate(ex)) find(`${where}: example ${JSON.stringify(ex).slice(0, 80)}: ${ajv.errorsText(validate.errors)}`);
};
for (const [name, s] of Object.entries(doc.components?.schemas ?? {}))
    if (s.examples) checkExamples({ $ref: `#/components/schemas/${name}` }, s.examples, `#/components/schemas/${name}`);
for (const [path, item] of Object.entries(doc.paths ?? {}))
    for (const m of METHODS.filter((k) => item[k])) {
        const op = item[m];
        const media = [op.requestBody?.content?.['application/json'],
            ...Object.values(op.responses ?? {}).map((r) => r.content?.['application/json'])].filter(Boolean);
        for (const c of media) {
            try { ajv.compileFor(c.schema); } catch (e) { find(`${m.toUpperCase()} ${path}: ${e.message}`); }
            const exs = [...(c.example !== undefined ? [c.example] : []),
                ...Object.values(c.examples ?? {}).map((e) => e.value)];
            if (exs.length) checkExamples(c.schema, exs, `${m.toUpperCase()} ${path}`);
        }
    }

const nOps = Object.values(doc.paths ?? {}).reduce((n, item) => n + METHODS.filter((k) => item[k]).length, 0);
if (findings.length) {
    for (const f of findings) console.log(`openapi lint: ${f}`);
    process.exit(1);
}
console.log(`openapi lint: ${docPath}: OpenAPI ${doc.openapi}, ${nOps} operations on ${Object.keys(doc.paths).length} paths, ` +
    `${Object.keys(doc.components.schemas).length} schemas: no findings`);

// Ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect) over docs/openapi.json's schemas, for
// lint.mjs and contract.mjs: openapiAjv(doc).compileFor(schema) compiles a schema of the
// document (a component, or one inline in a path) with its #/components/schemas/ references.
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;
const BASE = 'https://warren.invalid/openapi.json';

export function openapiAjv(doc) {
    // strict: the schemas use only JSON Schema's words; union types (["string", "null"]) are
    // how 3.1 says nullable.
    const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
    addFormats(ajv);
    ajv.addSchema({ $id: BASE, $defs: rebase(doc.components?.schemas ?? {}) });
    ajv.compileFor = (schema) => ajv.compile(rebase(schema));
    return ajv;
}

// #/components/schemas/X -> BASE#/$defs/X, everywhere in a copy of node.
function rebase(node) {
    return JSON.parse(JSON.stringify(node).replaceAll('"#/components/schemas/', `"${BASE}#/$defs/`));
}

// Parse the Mermaid diagram on stdin with Mermaid's own parser; print {"ok": true, "type"} or {"ok": false, "error"}.
// Mermaid's sanitizer (DOMPurify) needs a window: jsdom gives it one before Mermaid loads.
import { JSDOM } from 'jsdom';

const { window } = new JSDOM('');
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import('mermaid');

let text = '';
for await (const chunk of process.stdin) text += chunk;
try {
    const result = await mermaid.parse(text);
    console.log(JSON.stringify({ ok: true, type: result.diagramType }));
} catch (err) {
    console.log(JSON.stringify({ ok: false, error: String(err?.message ?? err) }));
    process.exitCode = 1;
}

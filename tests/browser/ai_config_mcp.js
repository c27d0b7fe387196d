// Edits the external MCP servers of a deployed ai-config node in its edit dialog, in headless Debian Chromium, as a
// user would: reads what the dialog shows for a saved server, adds a stdio server with a secret environment
// variable, types the saved header's value again, saves, deploys and opens the dialog once more. Reports, as one
// JSON line on stdout, what the dialog showed at each step.
// Input (env): EDITOR_URL, CONFIG_ID, USERNAME + PASSWORD (adminAuth), HEADER_VALUE, ENV_VALUE, OUT_DIR.
"use strict";
const editor = require("./editor");

const env = process.env;
const LIST = "#node-config-ai-config-mcp-servers";

async function openDialog(page) {
    await page.evaluate((id) => RED.editor.editConfig("", "ai-config", id, "node-input"), env.CONFIG_ID);
    await page.waitForSelector(LIST + " .ai-config-mcp-server", { state: "attached", timeout: 15000 });
}

async function rows(page) {
    return page.$$eval(LIST + " .ai-config-mcp-server", (items) => items.map((row) => {
        const shown = (selector) => row.querySelector(selector).style.display !== "none";
        return {
            name: row.querySelector(".ai-config-mcp-name").value,
            transport: row.querySelector(".ai-config-mcp-transport").value,
            url: row.querySelector(".ai-config-mcp-url").value,
            command: row.querySelector(".ai-config-mcp-command").value,
            args: row.querySelector(".ai-config-mcp-args").value,
            urlShown: shown(".ai-config-mcp-http"),
            commandShown: shown(".ai-config-mcp-stdio"),
            secretsLabel: row.querySelector(".ai-config-mcp-secrets-label").textContent,
            secrets: Array.from(row.querySelectorAll(".ai-config-mcp-secret")).map((secret) => ({
                name: secret.querySelector(".ai-config-mcp-secret-name").value,
                value: secret.querySelector(".ai-config-mcp-secret-value").value,
                type: secret.querySelector(".ai-config-mcp-secret-value").type,
                placeholder: secret.querySelector(".ai-config-mcp-secret-value").placeholder,
                marked: secret.querySelector(".ai-config-mcp-secret-value").classList.contains("input-error")
            }))
        };
    }));
}

async function state(page) {
    return { rows: await rows(page), retypeShown: await page.locator("#node-config-ai-config-mcp-retype").isVisible() };
}

editor.runEditorScript(async (page, result) => {
    await openDialog(page);
    result.opened = await state(page);
    await editor.screenshot(page, result, "ai-config-mcp-opened.png");

    // A new stdio server with one secret environment variable.
    await page.click(".node-config-ai-config-mcp-row .red-ui-editableList-addButton");
    const added = page.locator(LIST + " .ai-config-mcp-server").last();
    await added.locator(".ai-config-mcp-name").fill("tracker");
    await added.locator(".ai-config-mcp-transport").selectOption("http");
    result.addedAsHttp = { urlShown: await added.locator(".ai-config-mcp-http").isVisible(),
        commandShown: await added.locator(".ai-config-mcp-stdio").isVisible() };
    await added.locator(".ai-config-mcp-transport").selectOption("stdio");
    await added.locator(".ai-config-mcp-command").fill("npx");
    await added.locator(".ai-config-mcp-args").fill("-y tracker-mcp --board \"Line 3\"");
    await added.locator(".ai-config-mcp-add-secret").click();
    await added.locator(".ai-config-mcp-secret-name").fill("TRACKER_TOKEN");
    await added.locator(".ai-config-mcp-secret-value").fill(env.ENV_VALUE);
    result.afterTyping = await state(page);
    // The saved header must be typed again, since the credential is written anew.
    await page.locator(LIST + " .ai-config-mcp-server").first().locator(".ai-config-mcp-secret-value")
        .fill(env.HEADER_VALUE);
    result.afterRetyping = await state(page);
    await editor.screenshot(page, result, "ai-config-mcp-edited.png");
    await page.click("#node-config-dialog-ok");
    await page.waitForSelector(LIST, { state: "detached", timeout: 15000 });

    // Node-RED answers the deploy before the new flows have started; once started, it tells the editor
    // ("notification/runtime-deploy" with the new revision).
    await page.evaluate(() => RED.comms.subscribe("notification/runtime-deploy", (topic, msg) => {
        window.__aiTestStarted = msg && msg.revision;
    }));
    await page.click("#red-ui-header-button-deploy");
    await page.waitForFunction(() => !RED.nodes.dirty(), null, { timeout: 20000 });
    await page.waitForFunction(() => window.__aiTestStarted && window.__aiTestStarted === RED.nodes.version(), null,
        { timeout: 30000 });

    await page.reload({ waitUntil: "domcontentloaded" });
    await editor.editorReady(page);
    await openDialog(page);
    result.reopened = await state(page);
    await page.click("#node-config-dialog-cancel");
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });

// Turns a deployed ai-config node into an Azure OpenAI one in its edit dialog, in headless Debian Chromium, as a
// user would: the Azure fields appear only for that provider, a deployment name Azure would refuse is marked, the
// model is marked as unable to call tools, then Done and Deploy. Reports, as one JSON line on stdout, what the
// dialog showed at each step.
// Input (env): EDITOR_URL, CONFIG_ID, USERNAME + PASSWORD (adminAuth), ENDPOINT, API_KEY, OUT_DIR.
"use strict";
const editor = require("./editor");

const env = process.env;
const AZURE = "#node-config-ai-config-azure";

async function state(page) {
    return page.evaluate((azure) => ({
        azureShown: document.querySelector(azure).style.display !== "none"
            && document.querySelector(azure).getBoundingClientRect().height > 0,
        hint: document.querySelector("#node-config-ai-config-baseUrl-hint").textContent,
        azureHint: document.querySelector(azure + " .form-tips").textContent,
        deploymentMarked: document.querySelector("#node-config-input-deployment").classList.contains("input-error"),
        versionMarked: document.querySelector("#node-config-input-apiVersion").classList.contains("input-error"),
        providerLabel: document.querySelector("#node-config-input-provider option:checked").textContent,
        toolCallingLabel: document.querySelector("label[for=node-config-input-toolCalling]").textContent
    }), AZURE);
}

editor.runEditorScript(async (page, result) => {
    await page.evaluate((id) => RED.editor.editConfig("", "ai-config", id, "node-input"), env.CONFIG_ID);
    await page.waitForSelector("#node-config-input-provider option[value=azure-openai]", { state: "attached",
        timeout: 15000 });
    result.opened = await state(page);

    await page.selectOption("#node-config-input-provider", "azure-openai");
    await page.fill("#node-config-input-baseUrl", env.ENDPOINT);
    await page.fill("#node-config-input-deployment", "../admin");
    await page.fill("#node-config-input-apiVersion", "latest");
    await page.locator("#node-config-input-apiVersion").blur();
    result.invalid = await state(page);
    await page.fill("#node-config-input-deployment", "gpt4o-mini-prod");
    await page.fill("#node-config-input-apiVersion", "2025-01-01-preview");
    await page.fill("#node-config-input-model", "gpt-4o-mini");
    await page.fill("#node-config-input-apiKey", env.API_KEY);
    await page.uncheck("#node-config-input-toolCalling");
    await page.locator("#node-config-input-model").blur();
    result.valid = await state(page);
    await editor.screenshot(page, result, "ai-config-azure.png");
    await page.click("#node-config-dialog-ok");
    await page.waitForSelector(AZURE, { state: "detached", timeout: 15000 });
    await page.click("#red-ui-header-button-deploy");
    await page.waitForFunction(() => !RED.nodes.dirty(), null, { timeout: 20000 });
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });

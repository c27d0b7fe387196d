// Opens the edit dialog of a deployed ai-config node in headless Debian Chromium and reports, as one JSON line on
// stdout, what it offers: the providers (values, labels, which are marked not available) and scenarios (from the
// service through the plugin's relay), which are chosen, the chosen provider's base URL hint, and whether it says
// the lists could not be loaded.
// Input (env): EDITOR_URL, CONFIG_ID, USERNAME + PASSWORD (adminAuth), OUT_DIR.
"use strict";
const editor = require("./editor");

const env = process.env;

async function configDialog(page, result) {
    await page.evaluate((id) => RED.editor.editConfig("", "ai-config", id, "node-input"), env.CONFIG_ID);
    await page.waitForSelector("#node-config-input-provider option", { state: "attached", timeout: 15000 });
    // Loaded (the service's providers listed: the saved one alone is shown until then; the saved scenarios are
    // listed at once, so they cannot tell) or not (the dialog says so): either ends the wait.
    await page.waitForFunction(() => $("#node-config-ai-config-lists-unavailable").is(":visible") ||
        $("#node-config-input-provider option").length > 1, null, { timeout: 15000 });
    result.unavailableShown = await page.locator("#node-config-ai-config-lists-unavailable").isVisible();
    result.providers = await page.$$eval("#node-config-input-provider option", (options) => options.map((o) => o.value));
    result.provider = await page.inputValue("#node-config-input-provider");
    result.providerOptions = await page.$$eval("#node-config-input-provider option", (options) => options.map((o) => ({
        value: o.value, label: o.textContent, unavailable: o.getAttribute("data-unavailable") === "true" })));
    result.baseUrlHint = await page.textContent("#node-config-ai-config-baseUrl-hint");
    result.scenarios = await page.$$eval("#node-config-ai-config-scenario-list label",
        (labels) => labels.map((label) => ({ key: label.querySelector("input").value, name: label.innerText.trim(),
                                             checked: label.querySelector("input").checked })));
    await editor.screenshot(page, result, "ai-config-dialog-" + (result.unavailableShown ? "offline" : "online") + ".png");
}

editor.runEditorScript(async (page, result) => {
    await configDialog(page, result);
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });

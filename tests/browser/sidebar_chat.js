// Drives the Node-RED editor in headless Debian Chromium (playwright-core): opens the AI tab on a given
// workspace tab, asks a question and records what the user sees while the answer streams.
// Input (env): EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR. Output: one JSON line on stdout.
"use strict";
const path = require("path");
const { chromium } = require("playwright-core");

const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function main() {
    const { EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR } = process.env;
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_FLAGS });
    const result = { partialTexts: [], pageErrors: [] };
    try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        page.on("pageerror", (err) => result.pageErrors.push(String(err)));
        await page.goto(EDITOR_URL + "/", { waitUntil: "domcontentloaded" });
        await page.waitForFunction(() => window.RED && RED.workspaces && RED.workspaces.active() &&
            document.querySelector(".ai-sidebar"), null, { timeout: 30000 });
        // A first visit may show Node-RED's own prompts (update notifications, welcome tour); answer them as a
        // user would before using the sidebar.
        await page.waitForTimeout(1500);
        for (let i = 0; i < 3; i++) {
            const dialog = page.locator(".red-ui-popover.red-ui-dialog .red-ui-dialog-toolbar button");
            const tour = page.locator(".red-ui-tourGuide-popover");
            if (await dialog.count()) await dialog.last().click();
            else if (await tour.count()) await page.keyboard.press("Escape");
            else break;
            await page.waitForTimeout(300);
        }
        await page.evaluate((tabId) => { RED.workspaces.show(tabId); RED.sidebar.show("ai-sidebar"); }, TAB_ID);
        result.activeTab = await page.evaluate(() => RED.workspaces.active());
        await page.fill(".ai-sidebar-input", QUESTION);
        await page.click(".ai-sidebar-actions .primary");
        const answer = page.locator(".ai-sidebar-message-assistant .ai-sidebar-text").last();
        const deadline = Date.now() + 30000;
        let text = "";
        while (Date.now() < deadline) {
            text = (await answer.count()) ? (await answer.innerText()).trim() : "";
            if (text && !result.partialTexts.includes(text)) result.partialTexts.push(text);
            if (text.includes(FINAL_TEXT)) break;
            await page.waitForTimeout(50);
        }
        await page.waitForFunction(() => !document.querySelector(".ai-sidebar-input").disabled, null,
            { timeout: 10000 });
        result.finalText = text;
        result.toolCards = await page.locator(".ai-sidebar-tool").count();
        result.errors = await page.locator(".ai-sidebar-error").allInnerTexts();
        result.screenshot = path.join(OUT_DIR, "sidebar-explain-current-flow.png");
        await page.screenshot({ path: result.screenshot });
    } finally {
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });

// Asks a question in the AI sidebar with an ai-config node chosen whose external MCP server cannot be reached, in
// headless Debian Chromium, and reports, as one JSON line on stdout, the notice under the answer: its code, the
// server it names, the server's name as shown first and the service's sentence.
// Input (env): EDITOR_URL, TAB_ID, CONFIG_ID, QUESTION, USERNAME + PASSWORD (adminAuth), OUT_DIR.
"use strict";
const editor = require("./editor");

const env = process.env;

editor.runEditorScript(async (page, result) => {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.waitForSelector(`.ai-sidebar-config option[value='${env.CONFIG_ID}']`,
        { state: "attached", timeout: 15000 });
    await page.selectOption(".ai-sidebar-config", env.CONFIG_ID);
    result.answer = await editor.ask(page, env.QUESTION);
    result.notices = await page.evaluate(() => {
        const answer = Array.from(document.querySelectorAll(".ai-sidebar-message-assistant")).pop();
        return Array.from(answer.querySelectorAll(".ai-sidebar-notice")).map((notice) => ({
            code: notice.getAttribute("data-code"),
            server: notice.getAttribute("data-server"),
            shownFirst: (notice.querySelector(".ai-sidebar-notice-server") || {}).textContent || null,
            text: notice.querySelector(".ai-sidebar-notice-text").innerText.trim(),
            icon: notice.querySelector(".fa").className
        }));
    });
    await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "sidebar-mcp-notice.png");
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });

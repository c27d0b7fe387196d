// @-mentions, slash commands and "Ask the assistant about this node" (issue 37; tests/test_browser_mentions.py), the
// sidebar 240 px wide, with the keyboard: `@` on a 2,000-node workspace lists matches, each keystroke's ranking and
// rendering timed in the page (performance.now from the keydown to the list's change); two mentions chosen with
// Enter, the second removed from its chip with Shift+Tab and Enter, the question sent; a user template run as
// `/name`; `/plan` chosen from the list switches the mode; the canvas context menu's entry adds the node as a chip.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID (the small tab the questions are asked on), BIG_TAB_ID
// (the 2,000 nodes), KEEP_QUERY + KEEP_NAME (the mention kept), DROP_QUERY + DROP_NAME (the one removed), QUESTION,
// TEMPLATE_COMMAND, TEMPLATE_WORDS, MENU_NODE_ID (a node of TAB_ID for the context menu), INFO_NODE_ID (another, for the Info
// sidebar's button).
// Output: one JSON line on stdout.
// Waits for a state are bounded at 60 s: a resumed approval took longer than 10 s beside make test's other passes.
"use strict";
const editor = require("./editor");

const env = process.env;

/** Time every keystroke in the input until the suggestion list next changes (performance.now, in the page). */
async function startTiming(page) {
    await page.evaluate(() => {
        const input = document.querySelector(".ai-sidebar-input");
        const list = document.querySelector(".ai-sidebar-suggestions");
        window.aiMentionTimes = [];
        let pressed = null;
        input.addEventListener("keydown", () => {
            pressed = performance.now();
        }, true);
        new MutationObserver(() => {
            if (pressed !== null) {
                window.aiMentionTimes.push(performance.now() - pressed);
                pressed = null;
            }
        }).observe(list, { childList: true, subtree: true, attributes: true });
    });
}

/** The suggestion list as shown: its rows' labels and kinds, the active one, and whether the input names it. */
async function suggestions(page) {
    return page.evaluate(() => {
        const input = document.querySelector(".ai-sidebar-input");
        const list = document.querySelector(".ai-sidebar-suggestions");
        const rows = Array.from(list.querySelectorAll("[role=option]"));
        return {
            visible: list.offsetParent !== null,
            role: list.getAttribute("role"),
            autocomplete: input.getAttribute("aria-autocomplete"),
            controls: input.getAttribute("aria-controls") === list.id,
            labels: rows.map((row) => row.querySelector(".ai-sidebar-suggestion-label").textContent),
            kinds: rows.map((row) => row.getAttribute("data-kind")),
            active: input.getAttribute("aria-activedescendant"),
            firstId: rows.length ? rows[0].id : null,
            fitsWidth: list.scrollWidth <= list.clientWidth + 1
        };
    });
}

async function chipNames(page, selector) {
    return page.locator(selector + " .ai-sidebar-node-chip-name").allInnerTexts();
}

async function focused(page) {
    return page.evaluate(() => ({ className: document.activeElement.className,
        name: document.activeElement.getAttribute("aria-label") }));
}

editor.runEditorScript(async (page, result) => {
    const before = await editor.sidebarWidth(page);
    result.width = await editor.resizeSidebar(page, 240);
    try {
        await editor.showTab(page, env.TAB_ID);
        await editor.newChat(page);
        await editor.waitIdle(page);
        result.workspaceNodes = await page.evaluate(() => {
            let count = 0;
            RED.nodes.eachNode(() => {
                count++;
            });
            return count;
        });

        // 1. `@` with the keyboard: matches within 50 ms of each keystroke; Enter chooses the first.
        await startTiming(page);
        await page.focus(".ai-sidebar-input");
        await page.keyboard.type("@" + env.KEEP_QUERY, { delay: 30 });
        await page.waitForSelector(".ai-sidebar-suggestion", { timeout: 60000 });
        result.keepList = await suggestions(page);
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "mentions-list.png");
        await page.keyboard.press("Enter");
        await page.keyboard.type("@" + env.DROP_QUERY, { delay: 30 });
        result.dropList = await suggestions(page);
        await page.keyboard.press("Enter");
        result.times = await page.evaluate(() => window.aiMentionTimes);
        result.inputAfterChoosing = await page.inputValue(".ai-sidebar-input");
        result.chips = await chipNames(page, ".ai-sidebar-mention-chips");
        result.chipsLabel = await page.getAttribute(".ai-sidebar-mention-chips", "aria-label");
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "mentions-chips.png");
        // Shift+Tab from the input reaches the last chip's remove button; Enter removes that mention.
        await page.keyboard.press("Shift+Tab");
        result.focusedChip = await focused(page);
        await page.keyboard.press("Enter");
        result.chipsAfterRemoval = await chipNames(page, ".ai-sidebar-mention-chips");
        await page.focus(".ai-sidebar-input");
        await page.keyboard.type(env.QUESTION);
        await page.keyboard.press("Enter");
        await editor.waitIdle(page);
        result.sentContext = (await page.locator(".ai-sidebar-message-user .ai-sidebar-sent-context").last()
            .innerText()).trim();
        result.chipsAfterSend = await chipNames(page, ".ai-sidebar-mention-chips");
        result.answer = await editor.lastAnswerText(page);
        await editor.screenshot(page, result, "mentions-answer.png");

        // 2. A user template as /name: chosen from the list, completed with words, sent with Enter.
        await page.focus(".ai-sidebar-input");
        await page.keyboard.type("/" + env.TEMPLATE_COMMAND.slice(0, 3), { delay: 30 });
        await page.waitForFunction((name) => Array.from(document.querySelectorAll(".ai-sidebar-suggestion-label"))
            .some((el) => el.textContent === "/" + name), env.TEMPLATE_COMMAND, { timeout: 60000 });
        result.templateList = await suggestions(page);
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "mentions-slash.png");
        while ((await suggestions(page)).labels.indexOf("/" + env.TEMPLATE_COMMAND) !==
            await page.evaluate(() => Number((document.querySelector(".ai-sidebar-input")
                .getAttribute("aria-activedescendant") || "-1").split("-").pop()))) {
            await page.keyboard.press("ArrowDown");
        }
        await page.keyboard.press("Enter");
        result.templateInput = await page.inputValue(".ai-sidebar-input");
        await page.keyboard.type(env.TEMPLATE_WORDS);
        await page.keyboard.press("Enter");
        await editor.waitIdle(page);
        result.templateAnswer = await editor.lastAnswerText(page);

        // 3. /plan from the list switches the mode; Enter on "/plan" alone sends nothing.
        const questions = await page.locator(".ai-sidebar-message-user").count();
        await page.focus(".ai-sidebar-input");
        await page.keyboard.type("/pl", { delay: 30 });
        result.planList = await suggestions(page);
        await page.keyboard.press("Enter");
        result.planInput = await page.inputValue(".ai-sidebar-input");
        await page.keyboard.press("Enter");
        result.planChecked = await page.getAttribute(".ai-sidebar-mode-plan", "aria-checked");
        result.questionsAfterPlan = (await page.locator(".ai-sidebar-message-user").count()) - questions;
        result.inputAfterPlan = await page.inputValue(".ai-sidebar-input");
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "mentions-plan.png");

        // /help lists the commands in the conversation, sending nothing.
        await page.keyboard.type("/help");
        await page.keyboard.press("Escape");
        await page.keyboard.press("Enter");
        result.help = await page.locator(".ai-sidebar-slash-help dt").allInnerTexts();
        result.questionsAfterHelp = (await page.locator(".ai-sidebar-message-user").count()) - questions;

        // 4. The canvas context menu's entry: the node becomes a chip, the focus goes to the input.
        const box = await page.evaluate((id) => {
            RED.view.select({ nodes: [RED.nodes.node(id)] });
            RED.view.reveal(id);
            const rect = document.getElementById(id).getBoundingClientRect();
            return { x: rect.x + rect.width / 2, y: rect.y + rect.height / 2 };
        }, env.MENU_NODE_ID);
        await page.mouse.click(box.x, box.y, { button: "right" });
        const entry = page.locator("#red-ui-workspace-context-menu a", { hasText: "Ask the assistant about this node" });
        await entry.waitFor({ timeout: 60000 });
        await editor.screenshot(page, result, "mentions-context-menu.png");
        await entry.click();
        result.menuChips = await chipNames(page, ".ai-sidebar-mention-chips");
        result.menuFocus = await focused(page);
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "mentions-menu-chip.png");

        // The Info sidebar's button does the same for the node selected there, by the keyboard.
        await page.evaluate((id) => {
            RED.view.select({ nodes: [RED.nodes.node(id)] });
            RED.sidebar.show("info");
        }, env.INFO_NODE_ID);
        const infoButton = page.locator(".ai-sidebar-info-ask");
        await infoButton.waitFor({ state: "visible", timeout: 60000 });
        result.infoButtonName = await infoButton.getAttribute("aria-label");
        await editor.screenshot(page, result, "mentions-info-button.png");
        await infoButton.focus();
        await page.keyboard.press("Enter");
        await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-mention-chip").length >= 2 &&
            document.querySelector(".ai-sidebar-input").offsetParent !== null, null, { timeout: 60000 });
        result.infoChips = await chipNames(page, ".ai-sidebar-mention-chips");

        // 5. Reloaded, the question still says what was mentioned with it.
        const reloaded = await editor.openEditor(page.context(), env.EDITOR_URL, {},
            { username: env.USERNAME, password: env.PASSWORD });
        await editor.showTab(reloaded, env.TAB_ID);
        await reloaded.waitForSelector(".ai-sidebar-message-user .ai-sidebar-sent-context", { timeout: 15000 });
        result.reloadedContexts = (await reloaded.locator(".ai-sidebar-message-user .ai-sidebar-sent-context")
            .allInnerTexts()).map((text) => text.trim());
        await reloaded.close();
    } finally {
        await editor.resizeSidebar(page, before);
    }
});

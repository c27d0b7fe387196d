// Browser modes for the conversation itself, run by sidebar_features.js (same input and output): answers that load
// nothing, the composer (kept text, character counter), a new chat without a history request, Stop and stored
// faults, and the tab button and header layout.
// Modes: remote-content, composer, new-chat, stop, layout.
"use strict";
const editor = require("./editor");

const env = process.env;

function credentials() {
    return env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null;
}

/** What in the assistant messages could load something, and what they show. */
async function remoteContentCheck(page, marker) {
    return page.evaluate((mark) => {
        const answers = Array.from(document.querySelectorAll(".ai-sidebar-message-assistant"));
        const all = answers.flatMap((a) => Array.from(a.querySelectorAll("*")));
        const loaders = "img, picture, source, video, audio, track, iframe, frame, object, embed, link, style, svg, " +
            "image, form, input";
        return {
            loaders: answers.flatMap((a) => Array.from(a.querySelectorAll(loaders))).map((el) => el.tagName),
            loadingAttributes: all.flatMap((el) => ["src", "srcset", "style", "background", "poster", "data"]
                .filter((name) => el.hasAttribute(name)).map((name) => el.tagName + "[" + name + "]")),
            backgrounds: all.filter((el) => getComputedStyle(el).backgroundImage !== "none").map((el) => el.tagName),
            resources: performance.getEntriesByType("resource").map((e) => e.name).filter((n) => n.includes(mark)),
            links: answers.flatMap((a) => Array.from(a.querySelectorAll("a"))).map((a) => ({
                text: a.innerText.trim(),
                href: a.getAttribute("href"),
                target: a.getAttribute("target"),
                rel: a.getAttribute("rel")
            })),
            text: answers.map((a) => a.innerText).join("\n")
        };
    }, marker);
}

// An answer full of images, media, styles and frames pointing at MARKER URLs: rendered live and reloaded from the
// history, none of them is requested; images show as "[image: alt]" links, other links open safely.
async function remoteContentMode(page, result, context, record) {
    const requested = [];
    context.on("request", (request) => {
        if (request.url().includes(env.MARKER)) {
            requested.push(request.url());
        }
    });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    // Long enough for an image or a stylesheet to be asked for. A duration stays: the check is that no request is
    // sent, which no event announces (the answer is shown: editor.ask waited for it).
    await page.waitForTimeout(1000);
    result.live = await remoteContentCheck(page, env.MARKER);
    await editor.screenshot(page, result, "sidebar-remote-content.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-remote-content-answer.png");
    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    await again.waitForSelector(".ai-sidebar-message-assistant .ai-sidebar-text", { timeout: 15000 });
    // A duration stays (the reloaded answer is shown, waited for above): no remote request must follow.
    await again.waitForTimeout(1000);
    result.reloaded = await remoteContentCheck(again, env.MARKER);
    result.requested = requested;
}

async function composerState(page) {
    return page.evaluate(() => {
        const counter = document.querySelector(".ai-sidebar-counter");
        const input = document.querySelector(".ai-sidebar-input");
        return {
            inputLength: input.value.length,
            counter: counter && counter.offsetParent !== null ? counter.innerText.trim() : null,
            over: !!counter && counter.classList.contains("ai-sidebar-counter-over"),
            counterColor: counter ? getComputedStyle(counter).color : null,
            sendDisabled: document.querySelector(".ai-sidebar-send").disabled,
            questions: document.querySelectorAll(".ai-sidebar-message-user").length
        };
    });
}

// The character counter appears near the limit; a question over it is not sent (Send disabled, Enter ignored) and
// stays in the input, so it can be shortened; shortened, it goes.
async function composerMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.fill(".ai-sidebar-input", "a".repeat(8000));
    result.short = await composerState(page);
    await page.fill(".ai-sidebar-input", "b".repeat(9500));
    result.near = await composerState(page);
    const tooLong = "Explain this: " + "c".repeat(10050);
    await page.fill(".ai-sidebar-input", tooLong);
    result.over = await composerState(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "sidebar-counter-over.png");
    await page.focus(".ai-sidebar-input");
    await page.keyboard.press("Enter");
    // Nothing to wait for if nothing is sent: a page timer set now runs after any the key's handling set.
    await editor.pageTimers(page, 200);
    result.refused = await composerState(page);
    result.keptText = (await page.inputValue(".ai-sidebar-input")) === tooLong;
    // Shortened below the limit, Send works again.
    await page.fill(".ai-sidebar-input", "Explain this: " + "c".repeat(9900));
    result.shortened = await composerState(page);
    // Over the limit again, then a quick prompt of the empty chat takes the input's place: Send is back.
    await page.fill(".ai-sidebar-input", tooLong);
    await page.locator(".ai-sidebar-prompt").first().click();
    result.prompted = await composerState(page);
    // A very long question on screen scrolls in the message list; the header keeps its height.
    result.header = await page.evaluate(() => {
        const header = document.querySelector(".ai-sidebar .red-ui-sidebar-header");
        const button = header.querySelector(".ai-sidebar-new-chat").getBoundingClientRect();
        const box = header.getBoundingClientRect();
        return { newChatInside: button.top >= box.top && button.bottom <= box.bottom, height: Math.round(box.height) };
    });
    await editor.screenshot(page, result, "sidebar-refused-text-kept.png");
}

/** Record every history request and its status on all pages of the context. */
function recordHistoryRequests(context) {
    const seen = [];
    context.on("response", (response) => {
        if (response.url().includes("/ai-sidebar/history/")) {
            seen.push({ path: new URL(response.url()).pathname, status: response.status() });
        }
    });
    return seen;
}

// A new chat asks for no history: not on a first visit, not after New chat, not when the editor is opened again
// before anything was asked. Once a question was answered, the editor opened again loads the conversation.
async function newChatMode(page, result, context, record) {
    // The first page was opened before this ran: its requests are in the browser's own log of resources.
    result.firstVisit = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => e.name)
        .filter((name) => name.includes("/ai-sidebar/history/")));
    const history = recordHistoryRequests(context);
    await editor.showTab(page, env.TAB_ID);
    result.firstVisitEmpty = await page.locator(".ai-sidebar-empty").isVisible();
    await editor.newChat(page);
    // A duration stays: the check is that a new chat asks for no history, which no event announces.
    await page.waitForTimeout(1000);
    result.afterNewChat = history.slice();
    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    // A duration stays: the reopened editor must ask for no history before a question, which no event announces.
    await again.waitForTimeout(1000);
    result.afterReopen = history.slice();
    result.reopenedEmpty = await again.locator(".ai-sidebar-empty").isVisible();
    await editor.screenshot(again, result, "sidebar-new-chat-reopened.png");
    await editor.ask(again, env.QUESTION);
    const third = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(third, env.TAB_ID);
    await third.waitForSelector(".ai-sidebar-message-assistant", { timeout: 15000 });
    result.afterAnswer = history.slice();
    result.transcript = await editor.transcript(third);
    result.sidebarConsoleErrors = record.consoleErrors.filter((e) => /ai-sidebar/.test(e.url + " " + e.text));
}

async function headerName(page) {
    return (await page.locator(".ai-sidebar-session-button .ai-sidebar-session-name").innerText()).trim();
}

// Stop cuts an answer: the part shown gets a "stopped" mark and the header takes the saved conversation's name. A
// question whose answer failed (llm_error) keeps its text in the input and comes back from the history with a
// "no answer" line; the stopped answer comes back with its mark when the service stored `stopped`.
async function stopMode(page, result, context, record) {
    const [first, second] = JSON.parse(env.QUESTIONS);
    const stored = [];
    context.on("response", (response) => {
        if (response.url().includes("/ai-sidebar/history/") && response.status() === 200) {
            stored.push(response.json().catch(() => null));
        }
    });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    result.headerBefore = await headerName(page);
    await page.fill(".ai-sidebar-input", first);
    await page.click(".ai-sidebar-send");
    await page.waitForFunction(() => {
        const text = document.querySelector(".ai-sidebar-message-assistant .ai-sidebar-text");
        return text && text.innerText.trim().length > 30;
    }, null, { timeout: 20000 });
    await page.click(".ai-sidebar-stop");
    await editor.waitIdle(page);
    result.stoppedMarks = (await page.locator(".ai-sidebar-message-assistant .ai-sidebar-stopped").allInnerTexts())
        .map((text) => text.trim());
    result.notes = await page.locator(".ai-sidebar-message-assistant .ai-sidebar-note").allInnerTexts();
    result.retryAfterStop = (await page.locator(".ai-sidebar-message-assistant .ai-sidebar-retry").allInnerTexts())
        .map((text) => text.trim());
    await page.waitForFunction((untitled) => document.querySelector(
        ".ai-sidebar-session-button .ai-sidebar-session-name").innerText.trim() !== untitled,
    result.headerBefore, { timeout: 15000 }).catch(() => {});
    result.headerAfterStop = await headerName(page);
    await editor.screenshot(page, result, "sidebar-stopped-answer.png");

    await page.fill(".ai-sidebar-input", second);
    await page.click(".ai-sidebar-send");
    await editor.waitIdle(page);
    result.failedInput = await page.inputValue(".ai-sidebar-input");
    result.failedErrors = await page.locator(".ai-sidebar-message-assistant").last().locator(".ai-sidebar-error")
        .allInnerTexts();

    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    await again.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message").length >= 3 &&
        !document.querySelector(".ai-sidebar-loading"), null, { timeout: 15000 });
    result.reloaded = await again.evaluate(() => Array.from(document.querySelectorAll(".ai-sidebar-message"))
        .map((el) => ({
            role: el.classList.contains("ai-sidebar-message-user") ? "user" : "assistant",
            stopped: el.querySelectorAll(".ai-sidebar-stopped").length,
            errors: Array.from(el.querySelectorAll(".ai-sidebar-error")).map((e) => e.innerText.trim()),
            text: Array.from(el.querySelectorAll(".ai-sidebar-text")).map((t) => t.innerText).join("\n").trim(),
            badges: Array.from(el.querySelectorAll(".ai-sidebar-badge")).map((b) => b.innerText.trim()),
            tools: Array.from(el.querySelectorAll(".ai-sidebar-tool-label")).map((b) => b.innerText.trim())
        })));
    result.reloadedHeader = await headerName(again);
    await editor.screenshot(again, result, "sidebar-stopped-and-failed-reloaded.png");
    const bodies = (await Promise.all(stored)).filter(Boolean);
    result.storedMessages = bodies.length ? bodies[bodies.length - 1].messages
        .map((m) => ({ role: m.role, metadata: m.metadata })) : null;
}

/** Where the header's parts are, and whether the session name is cut with an ellipsis. */
async function headerLayout(page) {
    return page.evaluate(() => {
        const header = document.querySelector(".ai-sidebar .red-ui-sidebar-header");
        const rect = (el) => {
            const r = el.getBoundingClientRect();
            return { left: Math.round(r.left), right: Math.round(r.right), width: Math.round(r.width) };
        };
        const name = header.querySelector(".ai-sidebar-session-name");
        const newChat = header.querySelector(".ai-sidebar-new-chat");
        const config = header.querySelector(".ai-sidebar-config");
        return {
            config: rect(config),
            sidebarWidth: Math.round(document.querySelector("#red-ui-sidebar").getBoundingClientRect().width),
            header: rect(header),
            newChat: rect(newChat),
            newChatText: newChat.innerText.trim(),
            newChatClipped: newChat.scrollWidth > newChat.clientWidth + 1,
            name: name.innerText.trim(),
            nameCut: name.scrollWidth > name.clientWidth,
            nameOverflow: getComputedStyle(name).textOverflow
        };
    });
}

/** Relative luminance contrast of two CSS rgb() colours (WCAG 2.1). */
function contrast(foreground, background) {
    const luminance = (css) => {
        const [r, g, b] = css.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map((c) => {
            const v = c / 255;
            return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [light, dark] = [luminance(foreground), luminance(background)].sort((a, b) => b - a);
    return Math.round(((light + 0.05) / (dark + 0.05)) * 100) / 100;
}

async function deleteButtonColours(page, state) {
    // The confirmation fades in: its button has rgb() colours only once it is rendered.
    await page.waitForFunction(() => {
        const button = document.querySelector(".ai-sidebar-session-confirm .ai-sidebar-session-confirm-delete");
        const style = button && getComputedStyle(button);
        return Boolean(style) && /\d/.test(style.color) && /\d/.test(style.backgroundColor);
    });
    const colours = await page.locator(".ai-sidebar-session-confirm").evaluate((confirm) => {
        const button = confirm.querySelector(".ai-sidebar-session-confirm-delete");
        return {
            color: getComputedStyle(button).color,
            background: getComputedStyle(button).backgroundColor,
            // A button narrower than its label shows only part of it.
            clipped: Array.from(confirm.querySelectorAll("button")).filter((b) => b.scrollWidth > b.clientWidth + 1)
                .map((b) => b.innerText.trim())
        };
    });
    return Object.assign({ state: state, contrast: contrast(colours.color, colours.background) }, colours);
}

// The AI tab has its own button in the sidebar's icon row. A long conversation name is cut with an ellipsis and
// leaves "New chat" in the header, in a wide and in a narrow sidebar; Delete's confirmation button is readable.
async function layoutMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await page.evaluate(() => RED.sidebar.show("info"));
    const tabButton = editor.tabButton(page);
    result.tabButtonVisible = await tabButton.isVisible();
    await editor.detailScreenshot(editor.tabButtonRow(page), result, "sidebar-tab-buttons.png");
    if (result.tabButtonVisible) {
        await tabButton.click();
    }
    result.sidebarShownByButton = await page.locator(".ai-sidebar").isVisible();
    await editor.showTab(page, env.TAB_ID);

    await editor.newChat(page);
    await page.waitForFunction(() => {
        const select = document.querySelector(".ai-sidebar-config");
        return select && select.offsetParent !== null && select.options.length > 1;
    }, null, { timeout: 15000 });
    await page.selectOption(".ai-sidebar-config", env.CONFIG_ID);
    await editor.ask(page, env.QUESTION);
    await page.click(".ai-sidebar-session-button");
    const row = page.locator(".ai-sidebar-session-current[data-session-id]");
    await row.waitFor({ timeout: 15000 });
    await row.locator(".ai-sidebar-session-rename").click();
    await page.fill(".ai-sidebar-session-input", env.LONG_NAME);
    await page.keyboard.press("Enter");
    await page.waitForFunction((name) => document.querySelector(".ai-sidebar-session-button .ai-sidebar-session-name")
        .innerText.trim() === name, env.LONG_NAME, { timeout: 15000 });
    await page.click(".ai-sidebar-session-button");
    result.wide = await headerLayout(page);
    await editor.screenshot(page, result, "sidebar-header-long-name-wide.png");

    // Narrow the sidebar the way a user does, by dragging the separator to the right.
    await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
    result.narrow = await headerLayout(page);
    await editor.screenshot(page, result, "sidebar-header-long-name-narrow.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar .red-ui-sidebar-header"), result,
        "sidebar-header-long-name-narrow-detail.png");

    await page.click(".ai-sidebar-session-button");
    // The list is drawn from the sessions known so far, then again once fetched: a row of the first drawing may be
    // replaced under the click (a loaded CI run clicked a delete button that never asked to confirm).
    await page.waitForSelector(".ai-sidebar-session-list[data-loaded]", { state: "attached", timeout: 15000 });
    const current = page.locator(".ai-sidebar-session-current[data-session-id]");
    await current.locator(".ai-sidebar-session-delete").click();
    result.deleteButton = [await deleteButtonColours(page, "focused")];
    await page.locator(".ai-sidebar-session-confirm-delete").hover();
    result.deleteButton.push(await deleteButtonColours(page, "hovered"));
    await editor.detailScreenshot(page.locator(".ai-sidebar-sessions"), result, "sidebar-session-delete-contrast.png");
    await page.mouse.move(10, 10);
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    result.deleteButton.push(await deleteButtonColours(page, "resting"));
    await editor.screenshot(page, result, "sidebar-session-delete-narrow.png");
    await current.locator(".ai-sidebar-session-cancel").click();
    await editor.resizeSidebar(page, result.wide.sidebarWidth);
}

module.exports = {
    MODES: {
        "remote-content": remoteContentMode,
        "composer": composerMode,
        "new-chat": newChatMode,
        "stop": stopMode,
        "layout": layoutMode
    }
};

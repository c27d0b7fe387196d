/**
 * The Knowledge panel's document library (issue 37): the team's and the user's own documents (Markdown, text,
 * HTML, PDF) the assistant searches and cites. Add with the file picker or by dropping files on the section, shared
 * with everyone (needs `ai-sidebar.write`) or private; a file of the same name replaces the document; each listed
 * with its passages and size, deletable; a search box shows what a question would find. The service words every
 * refusal (too large, unreadable, limit) in the editor's language; it is shown as it comes.
 *
 * Editor-only script: registers `NodeRedAiSidebar.DocumentsSection`.
 */
(function () {
    "use strict";

    var NS = "node-red-contrib-ai-sidebar/ai-sidebar:";
    var WRITE_PERMISSION = "ai-sidebar.write";
    var ROUTE = "ai-sidebar/knowledge/documents";
    var ACCEPT = ".md,.markdown,.txt,.text,.html,.htm,.pdf";

    function t(key, options) {
        return RED._(NS + "knowledge.documents." + key, options);
    }

    function api() {
        return window.NodeRedAiSidebar.adminApi;
    }

    /** A size in bytes as the editor's language writes it: "12 KB", "1.4 MB". */
    function size(bytes) {
        var format = function (value, unit) {
            return new Intl.NumberFormat(RED.i18n && RED.i18n.lang ? RED.i18n.lang() : undefined,
                { maximumFractionDigits: 1 }).format(value) + " " + unit;
        };
        if (bytes < 1024) {
            return format(bytes, "B");
        }
        return bytes < 1024 * 1024 ? format(bytes / 1024, "KB") : format(bytes / 1024 / 1024, "MB");
    }

    /** The base64 of a File (without the data: URL's head). */
    function base64Of(file) {
        return new Promise(function (resolve, reject) {
            var reader = new FileReader();
            reader.onload = function () {
                var url = String(reader.result || "");
                resolve(url.slice(url.indexOf(",") + 1));
            };
            reader.onerror = function () {
                reject(reader.error || new Error("unreadable"));
            };
            reader.readAsDataURL(file);
        });
    }

    function DocumentsSection() {
        var self = this;
        this.element = $('<details class="ai-sidebar-knowledge-store ai-sidebar-documents" open></details>')
            .attr("data-store", "documents");
        var summary = $("<summary></summary>").appendTo(this.element);
        $('<span class="ai-sidebar-knowledge-store-name"></span>').text(t("title")).appendTo(summary);
        this.counts = $('<span class="ai-sidebar-knowledge-counts"></span>').appendTo(summary);
        var add = $('<div class="ai-sidebar-documents-add"></div>').appendTo(this.element);
        this.input = $('<input type="file" multiple class="ai-sidebar-documents-file" hidden>').attr("accept", ACCEPT)
            .on("change", function () {
                var files = Array.prototype.slice.call(this.files || []);
                this.value = "";
                self.upload(files);
            })
            .appendTo(add);
        this.addButton = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-documents-pick">' +
            '</button>')
            .append($('<i class="fa fa-plus" aria-hidden="true"></i>'))
            .append(document.createTextNode(" " + t("add")))
            .attr("title", t("addTooltip"))
            .on("click", function (event) {
                event.preventDefault();
                self.input.trigger("click");
            })
            .appendTo(add);
        var sharedLabel = $('<label class="ai-sidebar-documents-shared-label"></label>').appendTo(add);
        this.shared = $('<input type="checkbox" class="ai-sidebar-documents-shared">').appendTo(sharedLabel);
        sharedLabel.append(document.createTextNode(" " + t("shared")));
        $('<div class="ai-sidebar-note ai-sidebar-documents-hint"></div>').text(t("hint")).appendTo(this.element);
        this.status = $('<div class="ai-sidebar-documents-status" role="status" aria-live="polite"></div>')
            .appendTo(this.element);
        this.list = $('<ul class="ai-sidebar-knowledge-sources ai-sidebar-documents-list"></ul>')
            .attr("aria-label", t("title")).appendTo(this.element);
        var search = $('<form class="ai-sidebar-documents-search" role="search"></form>').appendTo(this.element)
            .on("submit", function (event) {
                event.preventDefault();
                self.search(self.query.val());
            });
        this.query = $('<input type="search" class="ai-sidebar-documents-query">')
            .attr("placeholder", t("search")).attr("aria-label", t("search")).appendTo(search);
        this.results = $('<ul class="ai-sidebar-documents-results"></ul>').attr("aria-label", t("results"))
            .appendTo(this.element);
        // Files dropped on the section are added like picked ones.
        this.element.on("dragover", function (event) {
            event.preventDefault();
            self.element.addClass("ai-sidebar-documents-drop");
        }).on("dragleave drop", function (event) {
            event.preventDefault();
            self.element.removeClass("ai-sidebar-documents-drop");
            var transfer = event.originalEvent && event.originalEvent.dataTransfer;
            if (event.type === "drop" && transfer && transfer.files && transfer.files.length) {
                self.upload(Array.prototype.slice.call(transfer.files));
            }
        });
    }

    DocumentsSection.prototype.showStatus = function (text, error) {
        this.status.text(text || "").toggleClass("ai-sidebar-error", !!error);
    };

    /** Read the library again and show it (the caller's view: shared ones and their own private ones). */
    DocumentsSection.prototype.load = function () {
        var self = this;
        var mayWrite = RED.user.hasPermission(WRITE_PERMISSION);
        this.shared.prop("disabled", !mayWrite).prop("checked", this.shared.prop("checked") && mayWrite)
            .closest("label").attr("title", mayWrite ? t("sharedTooltip") : t("sharedReadOnly"));
        return api().requestJson("GET", ROUTE).then(function (body) {
            self.show(body);
        }, function (err) {
            self.list.empty();
            self.showStatus(t("loadFailed", { message: err.message }), true);
        });
    };

    DocumentsSection.prototype.show = function (body) {
        var self = this;
        var documents = (body && Array.isArray(body.documents)) ? body.documents : [];
        var stats = (body && body.stats) || {};
        this.counts.text(t("count", { count: documents.length }) + " \u00b7 " +
            RED._(NS + "knowledge.chunks", { count: stats.chunks || 0 }));
        this.list.empty();
        if (!documents.length) {
            $('<li class="ai-sidebar-note ai-sidebar-documents-empty"></li>').text(t("empty")).appendTo(this.list);
            return;
        }
        var mayWrite = RED.user.hasPermission(WRITE_PERMISSION);
        documents.forEach(function (doc) {
            var item = $('<li class="ai-sidebar-document"></li>').attr("data-id", doc.id).attr("data-scope", doc.scope)
                .appendTo(self.list);
            $('<span class="ai-sidebar-knowledge-source ai-sidebar-document-name"></span>').text(doc.name)
                .appendTo(item);
            $('<span class="ai-sidebar-knowledge-source-detail ai-sidebar-document-detail"></span>')
                .text(t(doc.scope === "shared" ? "scopeShared" : "scopePrivate") + " \u00b7 " +
                    RED._(NS + "knowledge.chunks", { count: doc.chunks }) + " \u00b7 " + size(doc.bytes))
                .appendTo(item);
            var remove = $('<button type="button" class="red-ui-button red-ui-button-small ai-sidebar-document-delete">' +
                '</button>')
                .attr("aria-label", t("delete", { name: doc.name })).attr("title", t("delete", { name: doc.name }))
                .append($('<i class="fa fa-trash" aria-hidden="true"></i>'))
                .on("click", function (event) {
                    event.preventDefault();
                    self.remove(doc, item);
                })
                .appendTo(item);
            if (doc.scope === "shared" && !mayWrite) {
                remove.prop("disabled", true).attr("title", t("sharedReadOnly"));
            }
        });
    };

    /** Add (or replace by name) each file in turn; the status line says what happened to each. */
    DocumentsSection.prototype.upload = function (files) {
        var self = this;
        var shared = this.shared.is(":checked");
        var chain = Promise.resolve();
        var failed = false;
        files.forEach(function (file) {
            chain = chain.then(function () {
                self.showStatus(t("adding", { name: file.name }));
                return base64Of(file).then(function (data) {
                    return api().requestJson("POST", ROUTE, { name: file.name, data: data, shared: shared });
                }).then(function (body) {
                    var doc = body.document || {};
                    self.showStatus(t(doc.replaced ? "replaced" : "added",
                        { name: doc.name, count: doc.chunks }));
                }, function (err) {
                    failed = true;
                    self.showStatus(t("addFailed", { name: file.name, message: err.message }), true);
                });
            });
        });
        return chain.then(function () {
            var status = self.status.text();
            return self.load().then(function () {
                self.showStatus(status, failed);
            });
        });
    };

    DocumentsSection.prototype.remove = function (doc, item) {
        var self = this;
        var index = item.index();
        return api().requestJson("DELETE", ROUTE + "/" + encodeURIComponent(doc.id)).then(function () {
            var done = t("deleted", { name: doc.name });
            return self.load().then(function () {
                self.showStatus(done);
            });
        }, function (err) {
            self.showStatus(t("deleteFailed", { name: doc.name, message: err.message }), true);
        }).then(function () {
            // The keyboard stays in the list: on the delete button now in the deleted one's place, else on Add.
            var buttons = self.list.find(".ai-sidebar-document-delete:enabled");
            var target = buttons.eq(Math.min(index, buttons.length - 1));
            (buttons.length ? target : self.addButton).trigger("focus");
        });
    };

    DocumentsSection.prototype.search = function (query) {
        var self = this;
        this.results.empty();
        if (!String(query || "").trim()) {
            return Promise.resolve();
        }
        return api().requestJson("GET", ROUTE + "/search?q=" + encodeURIComponent(query)).then(function (body) {
            var hits = (body && body.hits) || [];
            if (!hits.length) {
                $('<li class="ai-sidebar-note"></li>').text(t("noHits")).appendTo(self.results);
            }
            hits.forEach(function (hit) {
                var item = $('<li class="ai-sidebar-documents-hit"></li>').appendTo(self.results);
                $('<div class="ai-sidebar-documents-hit-where"></div>').text(hit.citation).appendTo(item);
                $('<div class="ai-sidebar-documents-hit-text"></div>').text(String(hit.text).slice(0, 300))
                    .appendTo(item);
            });
        }, function (err) {
            self.showStatus(t("searchFailed", { message: err.message }), true);
        });
    };

    window.NodeRedAiSidebar = window.NodeRedAiSidebar || {};
    window.NodeRedAiSidebar.DocumentsSection = DocumentsSection;
}());

/**
 * The reasoning guides Cairn ships, written for Cairn. A Markdown file `<topic>.md` in `history.guides_dir`
 * replaces one of these or adds a topic. Each guide is a short rule set an agent reads on demand.
 */
export const BUILTIN_GUIDES: Readonly<Record<string, string>> = {
  tool_generate: `
Use this before writing a new tool (a script, an API descriptor or an MCP server entry).
- Search first: tool_search with two or three words of the intent. Reuse a tool that already does the job, even if its name is not the one you expected.
- One tool, one job. Name it verb_object in snake_case (\`convert_currency\`, not \`helper2\`).
- The description says what it returns and when to use it, in one or two sentences. Callers choose tools by this text.
- Parameters: the fewest that do the job, each with a type, a one-line description and a default where one is obvious. Mark required ones as required; never require what can be inferred.
- Results: plain text or compact JSON with stable field names. Say "no results" explicitly instead of returning an empty string.
- Errors: fail with a message that names the bad input and what would be accepted. Never print a stack trace.
- Never embed secrets in the tool; read them from the environment or configuration.
- Try the new tool once with realistic arguments before reporting it ready.`,

  tool_error: `
Read this after a tool call has come back failed, never before one has.
1. Read the error text. If the result carries \`related_errors\`, open each with error_history(hash=…) first: a fix that worked before usually works again.
2. Classify: bad arguments (fix them), missing permission or credentials (ask the user), transient (timeout, rate limit, network: wait or retry once), tool missing (find another with tool_search), no data (change the query, not the tool).
3. Never retry with identical arguments. Change one thing per attempt and say what you changed.
4. At most three attempts per error. After the second failure with no hint, search error_history(keyword=…) before trying again.
5. After three failed approaches, stop: tell the user what failed, what you tried, and what would unblock it.
6. Once a non-trivial fix is confirmed working, call write_error with the tool name, specific keywords, the symptom, the cause if known, the action that fixed it and outcome=resolved. Skip it for typos and one-off blips.`,

  web_search: `
Use this for questions that need current or external facts.
- Search when the answer depends on recent events, prices, versions, schedules or anything you cannot verify from memory. Do not search for stable common knowledge.
- Write queries as keywords, not sentences. Put the most specific term first; add the year for time-sensitive topics.
- Run independent searches in parallel; refine only after reading the first results.
- Prefer primary sources: official documentation, the publisher, the statistics office, the company's own filings. Treat forums and aggregators as leads, not evidence.
- Open the page before citing it; a search snippet is not a source.
- Before fetching a page again, check chat_history(mode=tool_list): an already-fetched page is reused with mode=tool.
- When sources disagree, say so and give both with their dates.
- Cite each claim with the page it came from. Never invent a URL.`,

  market_analysis: `
Use this for questions about prices, markets, companies or economic data.
- State the date and time of every figure; market data is stale within minutes to days.
- Use official or exchange data for prices and filings for company figures; name the source and its currency.
- Separate facts (reported numbers) from interpretation (your reading of them) and from forecasts (labelled as such, with their assumptions).
- Compare like with like: the same period, currency, and accounting basis. Adjust for inflation when comparing across years and say so.
- Show the calculation for every derived figure (growth rates, ratios, averages).
- Give ranges and uncertainty instead of a single confident number when the data is thin.
- Do not give personalised investment advice; describe the considerations and risks instead.`,

  targeted_read: `
Use this before reading files, pages or long documents.
- Locate before you read: list or search first (file names, headings, a keyword search), then open only the parts that answer the question.
- Read ranges, not whole files, when the file is large; widen the range only if the answer is cut off.
- Read several independent files in one batch rather than one per turn.
- Keep a note of what you already read this turn; never read the same range twice.
- Quote the exact lines you rely on, with their location, when the answer depends on them.
- Stop reading once the question is answered.`,

  ask_user: `
Use this before asking the user a question.
- Ask only when the answer changes what you do and you cannot find it yourself (memory_search, conversation_search, chat_history, files, tools).
- Do everything that does not depend on the answer first, then ask.
- Ask one focused question, or a short numbered list when several are needed at once; never a question per turn.
- Offer concrete options with a recommended default ("A (recommended), B or C?") so the user can answer in one word.
- Never ask for permission to do what the user already asked for.
- Do not ask for secrets in chat; point the user to the configuration instead.`,

  subagent_dispatch: `
Use this before handing work to a subagent.
- Dispatch only independent pieces that each take real effort (a separate research question, a separate file set). Small lookups are faster done yourself.
- Give each subagent a self-contained brief: the goal, the inputs it needs, the constraints, and the exact shape of the answer you want back. It cannot see your conversation.
- Run independent subagents in parallel; never two on the same files.
- Ask for sources and evidence, not only conclusions, and check them before relying on them.
- Merge the answers yourself: resolve contradictions, remove duplicates, and say what is still unknown.
- A subagent that cannot dispatch further runs every lookup itself.`,

  write_todo: `
Use this for work with three or more steps.
- Write the plan as a short checklist before starting: each item a concrete, checkable outcome ("tests for X pass"), not an activity ("work on X").
- Keep exactly one item in progress. Mark an item done as soon as it is done, not in batches.
- Add newly discovered work as new items instead of silently widening an existing one.
- If an item turns out to be unnecessary, remove it and say why.
- Before the final reply, check that every item is done or explicitly reported as not done.`,

  html_render: `
Use this before writing an HTML page (write_result with format=html).
- Write one complete, self-contained document: <!DOCTYPE html>, <html lang>, <head> with <meta charset="utf-8">, a viewport meta and a <title>, then <body>.
- Inline the CSS in a <style> block and the JavaScript in <script> blocks; besides QuickUI, load nothing you cannot rely on offline unless the user asked for it.
- Every inline script must be valid JavaScript on its own; the page is checked before it is written and a page that breaks any rule here is refused with every problem listed.
- Close every element that needs closing and keep nesting valid (no <div> inside <p>, no stray end tags); the document is parsed and parse errors are reported.
- Mount QuickUI: load it with <script src="…/quickui.js"> (any URL whose name holds quickui) and call T.init('#app', state) from an inline script, where #app is an element of the page. A page that does not is refused.
- Build content in the markup; never write markup from script (no document.write, innerHTML/outerHTML assignment or insertAdjacentHTML). Set text with textContent.
- No {{ }} expressions in the markup or its attributes: QuickUI does not evaluate them. Put the value in the markup.
- :if takes one state key, or !key. For a compound condition (a && b, n > 1) compute the key in the state and test that.
- Use semantic elements (header, main, section, table with thead/tbody) and readable contrast; make tables scroll on narrow screens.
- Escape user data placed in the page (&, <, >, quotes).`,

  office: `
Use this before creating or changing .docx, .xlsx or .pptx files.
- Generate files with a library that writes the Office Open XML format (python-docx, openpyxl, python-pptx, docx, exceljs, pptxgenjs); never hand-write the zipped XML.
- To change an existing file, open it with the library and edit it in place, so styles, numbering and relationships survive. Never rebuild it from extracted text.
- Word: use built-in heading styles for structure, real lists and tables, and page breaks instead of blank lines.
- Excel: write numbers as numbers and dates as dates, not text; put formulas in cells rather than computed values when the user will edit the sheet; freeze the header row.
- PowerPoint: start from a layout of the template; keep text inside placeholders; one message per slide.
- Keep file names plain ASCII without spaces when another program will open them.
- Open the result again with the library to check it loads before reporting it done.`,

  figure: `
Use this before writing a chart, flowchart, diagram or formula.
- Choose the simplest figure that answers the question: a table for exact values, a line chart for trends over time, bars for comparing categories, a scatter plot for relationships. Avoid pie charts with more than five slices.
- Diagrams in Markdown: use a fenced \`mermaid\` block (flowchart, sequenceDiagram, classDiagram, gantt). Keep node labels short and quote labels containing punctuation.
- Formulas: $…$ inline and $$…$$ for display, in LaTeX syntax.
- Charts: label both axes with units, start bar charts at zero, title every chart with what it shows and when.
- State the data source and date under the figure.
- A figure never replaces the numbers: give the key values in the text as well.`,
};

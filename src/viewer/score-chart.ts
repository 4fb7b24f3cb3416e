/**
 * The chart of a scorer's daily mean by arm (docs/http-api.md, "Scores"), drawn on the server as SVG
 * from a score report: one line per arm over the window's days, scores 0..1 up the side. The runs
 * page fetches it with the workflow's credentials and shows it under the scores table.
 *
 * Elements tests rely on: `svg[data-scorer]`, one `path.line[data-arm]` per arm, a `circle` per day
 * point with `data-day` and `data-mean`.
 */
import type { ScoreReport } from "../run/scores/score-summary.ts";
import { escapeHtml } from "./page-shell.ts";

const W = 640;
const H = 220;
const PAD = 32;
const COLOURS = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2"];

export function scoreChartSvg(report: ScoreReport, scorer: string): string {
  const points = report.daily.filter((d) => d.scorer === scorer);
  const days = [...new Set(points.map((p) => p.day))].sort();
  const arms = [...new Set(points.map((p) => p.arm ?? ""))].sort();
  const x = (day: string) =>
    PAD + (days.length <= 1 ? (W - 2 * PAD) / 2 : (days.indexOf(day) * (W - 2 * PAD)) / (days.length - 1));
  const y = (v: number) => H - PAD - v * (H - 2 * PAD);
  const esc = escapeHtml;
  const lines = arms.map((arm, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const mine = points.filter((p) => (p.arm ?? "") === arm).sort((a, b) => a.day.localeCompare(b.day));
    const d = mine
      .map((p, j) => `${j === 0 ? "M" : "L"}${x(p.day).toFixed(1)},${y(p.mean).toFixed(1)}`)
      .join(" ");
    const dots = mine
      .map(
        (p) =>
          `<circle cx="${x(p.day).toFixed(1)}" cy="${y(p.mean).toFixed(1)}" r="3" fill="${colour}" data-day="${esc(p.day)}" data-mean="${p.mean.toFixed(4)}"><title>${esc(arm || "(no arm)")} ${esc(p.day)}: ${p.mean.toFixed(3)} (${p.count} runs)</title></circle>`,
      )
      .join("");
    const label = `<text x="${W - PAD}" y="${PAD + 14 * i}" text-anchor="end" fill="${colour}" font-size="12">${esc(arm || "(no arm)")}</text>`;
    return `<path class="line" data-arm="${esc(arm)}" d="${d}" fill="none" stroke="${colour}" stroke-width="2"/>${dots}${label}`;
  });
  const axis = [0, 0.5, 1]
    .map(
      (v) =>
        `<text x="${PAD - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${v}</text><line x1="${PAD}" x2="${W - PAD}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
    )
    .join("");
  const ticks = days
    .map(
      (d) => `<text x="${x(d)}" y="${H - 8}" text-anchor="middle" font-size="10">${esc(d.slice(5))}</text>`,
    )
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" data-scorer="${esc(scorer)}" aria-label="daily mean of ${esc(scorer)} by arm">${axis}${ticks}${lines.join("")}</svg>`;
}

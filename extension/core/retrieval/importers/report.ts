/** What an import did: counts, and where the first bad records are, so a user can fix the file. */
export interface ImportReport {
  file: string;
  imported: number;
  skipped: number;
  malformed: number;
  /** "file:line: reason" for the first malformed records (at most 20). */
  firstErrors: string[];
}

export function newReport(file: string): ImportReport {
  return { file, imported: 0, skipped: 0, malformed: 0, firstErrors: [] };
}

export function recordMalformed(report: ImportReport, line: number, reason: string): void {
  report.malformed++;
  if (report.firstErrors.length < 20) report.firstErrors.push(`${report.file}:${line}: ${reason}`);
}

export function summarize(report: ImportReport): string {
  const head = `${report.file}: ${report.imported} imported, ${report.skipped} skipped, ${report.malformed} malformed`;
  return report.firstErrors.length ? `${head}\n  ${report.firstErrors.join("\n  ")}` : head;
}

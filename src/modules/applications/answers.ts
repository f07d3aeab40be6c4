/** The answers of an application against its form, and a form's own consistency: pure rules. */
import type { Answers, Question } from './schemas.js';

/**
 * The longest text answer. Declared here, not in schemas.ts (which re-exports it): the stores check answers
 * through this file and load nothing of the HTTP layer.
 */
export const MAX_TEXT_ANSWER = 4000;

export interface FieldProblem {
  field: string;
  message: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.toISOString().slice(0, 10) === value;
}

/** The answers against the form: each problem names the question, never the value given. */
export function checkAnswers(questions: readonly Question[], answers: Answers): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const byId = new Map(questions.map((q) => [q.id, q]));
  for (const id of Object.keys(answers)) {
    if (!byId.has(id)) problems.push({ field: `answers.${id}`, message: 'is not a question of the form' });
  }
  for (const q of questions) {
    const value = answers[q.id];
    const field = `answers.${q.id}`;
    if (value === undefined) {
      if (q.required) problems.push({ field, message: 'is required' });
      continue;
    }
    const wrong = (what: string) => problems.push({ field, message: `must be ${what}` });
    switch (q.type) {
      case 'text':
        if (typeof value !== 'string') wrong('a string');
        else if (value.length > (q.maxLength ?? MAX_TEXT_ANSWER))
          wrong(`at most ${q.maxLength ?? MAX_TEXT_ANSWER} characters`);
        else if (q.required && value.trim() === '') wrong('a non-empty string');
        break;
      case 'boolean':
        if (typeof value !== 'boolean') wrong('true or false');
        break;
      case 'number':
        if (typeof value !== 'number' || !Number.isFinite(value)) wrong('a number');
        break;
      case 'date':
        if (typeof value !== 'string' || !isDate(value)) wrong('a date (YYYY-MM-DD)');
        break;
      case 'choice':
        if (typeof value !== 'string' || !(q.options ?? []).includes(value)) wrong('one of the options');
        break;
    }
  }
  return problems.slice(0, 20);
}

/** A form's own consistency, beyond its schema: unique ids, options only (and always) for choices. */
export function checkForm(questions: readonly Question[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  questions.forEach((q, i) => {
    const field = `questions[${i}]`;
    if (seen.has(q.id)) problems.push({ field: `${field}.id`, message: 'repeats another question id' });
    seen.add(q.id);
    if (q.type === 'choice' && q.options === undefined)
      problems.push({ field: `${field}.options`, message: 'is required for a choice' });
    if (q.type !== 'choice' && q.options !== undefined)
      problems.push({ field: `${field}.options`, message: 'is only for a choice' });
    if (q.type !== 'text' && q.maxLength !== undefined)
      problems.push({ field: `${field}.maxLength`, message: 'is only for a text question' });
  });
  return problems.slice(0, 20);
}

/**
 * Properties of the applications' answer and form checkers (src/modules/applications/answers.ts), the decoders
 * of what a person and staff send: bounded output whatever the input, valid answers accepted, and no value a
 * person wrote ever quoted back (errors name the field, never its content). Seeded like the other fuzz suites.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { checkAnswers, checkForm } from '../src/modules/applications/answers.js';
import type { Question } from '../src/modules/applications/schemas.js';
import { SETTINGS, TEST_TIMEOUT } from './support/fuzz.js';

const slug = fc.stringMatching(/^[a-z0-9]{1,10}(?:-[a-z0-9]{1,8})?$/);
const question: fc.Arbitrary<Question> = fc
  .record({
    id: slug,
    label: fc.string({ minLength: 1, maxLength: 20 }),
    type: fc.constantFrom('text', 'boolean', 'number', 'date', 'choice' as const),
    required: fc.boolean(),
    options: fc.array(fc.string({ minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 5 }),
    maxLength: fc.integer({ min: 1, max: 4000 }),
  })
  .map(({ options, maxLength, ...q }) => ({
    ...q,
    ...(q.type === 'choice' ? { options } : {}),
    ...(q.type === 'text' ? { maxLength } : {}),
  }));
const questions = fc.uniqueArray(question, { maxLength: 50, selector: (q) => q.id });
// What a person may send: a marker so a value quoted back would be found.
const secret = fc.string({ minLength: 1, maxLength: 30 }).map((s) => `SECRET-${s}`);
const anyValue = fc.oneof(secret, fc.double(), fc.boolean(), fc.integer(), fc.constant(''));

describe('fuzz: application answers and forms', () => {
  test(
    'any answers: at most 20 problems, each naming an answers field, never quoting a value',
    { timeout: TEST_TIMEOUT },
    () => {
      fc.assert(
        fc.property(
          questions,
          fc.dictionary(fc.string({ minLength: 1, maxLength: 40 }), anyValue, { maxKeys: 50 }),
          (qs, answers) => {
            const problems = checkAnswers(qs, answers);
            assert.ok(problems.length <= 20);
            for (const p of problems) {
              assert.match(p.field, /^answers\./);
              assert.doesNotMatch(p.message, /SECRET-/);
            }
          },
        ),
        SETTINGS,
      );
    },
  );

  test('answers that fit their questions are accepted', { timeout: TEST_TIMEOUT }, () => {
    fc.assert(
      fc.property(
        questions,
        fc.string({ minLength: 1, maxLength: 1 }).filter((s) => s.trim() !== ''),
        (qs, text) => {
          const answers: Record<string, string | number | boolean> = {};
          for (const q of qs) {
            if (q.type === 'text') answers[q.id] = text;
            else if (q.type === 'boolean') answers[q.id] = true;
            else if (q.type === 'number') answers[q.id] = 3;
            else if (q.type === 'date') answers[q.id] = '2026-06-15';
            else answers[q.id] = q.options![0]!;
          }
          assert.deepEqual(checkAnswers(qs, answers), []);
        },
      ),
      SETTINGS,
    );
  });

  test('any form: at most 20 problems, each naming a question', { timeout: TEST_TIMEOUT }, () => {
    fc.assert(
      fc.property(fc.array(question, { maxLength: 50 }), (qs) => {
        const problems = checkForm(qs);
        assert.ok(problems.length <= 20);
        for (const p of problems) assert.match(p.field, /^questions\[\d+\]\./);
      }),
      SETTINGS,
    );
  });
});

/* global window, document, fetch */
// "Apply to adopt": the form is the shelter's (its questions come from the API through this shop's server) and
// the application goes to this shop's server, which holds the key that may submit it. The page never sees a
// key that can write, nor anyone's application but the one just typed.
(() => {
  function element(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    node.append(...children);
    return node;
  }

  const FRIENDLY = {
    pet_not_available: 'Sorry: this animal has just found a home or is no longer up for adoption.',
    application_exists: 'You have already applied for this animal; the shelter will be in touch.',
    open_application_limit:
      'You already have several open applications. Please wait for an answer to those before applying again.',
    consent_required:
      'Please agree to the processing of your data, or the shelter cannot handle your application.',
  };

  /** ajv's wording for a bad address reads oddly to a person. */
  const said = (message) => (/format "email"/.test(message) ? 'is not a valid email address' : message);

  /** A labelled field with a place for its error; `field` is the name the API's errors use for it. */
  function field(field, label, input, required) {
    input.setAttribute('name', field);
    input.setAttribute('id', `f-${field}`);
    if (required) input.setAttribute('aria-required', 'true');
    const error = element('p', { class: 'error', id: `e-${field}`, hidden: '' });
    input.setAttribute('aria-describedby', error.id);
    return element(
      'div',
      { class: 'field', 'data-field': field },
      element('label', { for: input.id }, label, required ? element('span', { class: 'req' }, ' *') : ''),
      input,
      error,
    );
  }

  function question(q) {
    const name = `answers.${q.id}`;
    switch (q.type) {
      case 'text':
        return field(
          name,
          q.label,
          element('textarea', { rows: '3', maxlength: String(q.maxLength ?? 4000) }),
          q.required,
        );
      case 'number':
        return field(
          name,
          q.label,
          element('input', { type: 'number', step: 'any', inputmode: 'decimal' }),
          q.required,
        );
      case 'date':
        return field(name, q.label, element('input', { type: 'date' }), q.required);
      case 'choice': {
        const select = element('select', {}, element('option', { value: '' }, 'Choose…'));
        for (const option of q.options ?? []) select.append(element('option', { value: option }, option));
        return field(name, q.label, select, q.required);
      }
      case 'boolean': {
        const group = element('div', { class: 'yesno', role: 'radiogroup' });
        for (const [value, label] of [
          ['true', 'Yes'],
          ['false', 'No'],
        ])
          group.append(element('label', {}, element('input', { type: 'radio', name, value }), ` ${label}`));
        const wrapper = element(
          'div',
          { class: 'field', 'data-field': name },
          element(
            'span',
            { class: 'legend' },
            q.label,
            q.required ? element('span', { class: 'req' }, ' *') : '',
          ),
          group,
          element('p', { class: 'error', id: `e-${name}`, hidden: '' }),
        );
        return wrapper;
      }
      default:
        return element('p', {}, `(${q.label}: a question this page cannot show)`);
    }
  }

  /** What the person filled in, as the API takes it: empty fields are left out (the API names missing ones). */
  function collect(formNode, questions, petId) {
    const data = new window.FormData(formNode);
    const value = (name) => String(data.get(name) ?? '').trim();
    const applicant = { name: value('applicant.name'), email: value('applicant.email') };
    if (value('applicant.phone')) applicant.phone = value('applicant.phone');
    const parts = ['line1', 'postcode', 'city', 'country'];
    if (parts.some((part) => value(`applicant.address.${part}`)))
      applicant.address = Object.fromEntries(parts.map((part) => [part, value(`applicant.address.${part}`)]));
    const answers = {};
    for (const q of questions) {
      const raw = value(`answers.${q.id}`);
      if (raw === '') continue;
      if (q.type === 'boolean') answers[q.id] = raw === 'true';
      else if (q.type === 'number') answers[q.id] = Number(raw);
      else answers[q.id] = raw;
    }
    return { petId, applicant, answers, consent: { dataProcessing: data.get('consent') === 'yes' } };
  }

  function showErrors(formNode, summary, problem) {
    for (const node of formNode.querySelectorAll('.field.invalid')) node.classList.remove('invalid');
    for (const node of formNode.querySelectorAll('.error')) node.hidden = true;
    const unplaced = [];
    const details =
      problem.code === 'consent_required'
        ? [{ field: 'consent', message: FRIENDLY.consent_required }]
        : (problem.details ?? []);
    for (const detail of details) {
      const box = formNode.querySelector(`[data-field="${window.CSS.escape(detail.field)}"]`);
      if (!box) {
        unplaced.push(`${detail.field} ${said(detail.message)}`);
        continue;
      }
      box.classList.add('invalid');
      const error = box.querySelector('.error');
      error.textContent = detail.field === 'consent' ? detail.message : `This ${said(detail.message)}.`;
      error.hidden = false;
    }
    summary.textContent =
      details.length > 0
        ? `Please check the marked ${details.length === 1 ? 'field' : 'fields'}.${unplaced.length ? ` ${unplaced.join('; ')}.` : ''}`
        : (FRIENDLY[problem.code] ?? problem.message ?? 'The application could not be sent.');
    summary.hidden = false;
    formNode.querySelector('.invalid input, .invalid textarea, .invalid select')?.focus();
  }

  const newKey = () =>
    window.crypto?.randomUUID?.() ?? `k${Date.now().toString(36)}${Math.random().toString(36).slice(2, 12)}`;

  /** Shows the apply form for `pet` in `container`; resolves once it is shown (or could not be). */
  async function open(container, pet) {
    document.body.dataset.state = 'loading';
    container.replaceChildren(element('p', {}, 'Loading the application form…'));
    let form;
    try {
      const response = await fetch('/api/application-form');
      form = await response.json();
      if (!response.ok) throw new Error(form.message);
    } catch (error) {
      container.replaceChildren(
        element('p', { class: 'error' }, `The form could not be loaded: ${error.message}`),
      );
      document.body.dataset.state = 'ready';
      return;
    }
    const summary = element('p', { class: 'summary', role: 'alert', hidden: '' });
    const text = (attributes = {}) => element('input', { type: 'text', ...attributes });
    const formNode = element(
      'form',
      { id: 'apply-form', novalidate: '' },
      element('h3', {}, `Apply to adopt ${pet.name}`),
      summary,
      element(
        'fieldset',
        {},
        element('legend', {}, 'About you'),
        field('applicant.name', 'Your name', text({ autocomplete: 'name', maxlength: '200' }), true),
        field(
          'applicant.email',
          'Email',
          element('input', { type: 'email', autocomplete: 'email', maxlength: '254' }),
          true,
        ),
        field(
          'applicant.phone',
          'Phone',
          element('input', { type: 'tel', autocomplete: 'tel', maxlength: '40' }),
          false,
        ),
      ),
      element(
        'fieldset',
        { class: 'address' },
        element('legend', {}, 'Address (optional)'),
        field(
          'applicant.address.line1',
          'Street and number',
          text({ autocomplete: 'address-line1', maxlength: '200' }),
          false,
        ),
        field(
          'applicant.address.postcode',
          'Postcode',
          text({ autocomplete: 'postal-code', maxlength: '20' }),
          false,
        ),
        field(
          'applicant.address.city',
          'City',
          text({ autocomplete: 'address-level2', maxlength: '100' }),
          false,
        ),
        field(
          'applicant.address.country',
          'Country (2 letters)',
          text({ autocomplete: 'country', maxlength: '2', size: '2', placeholder: 'DE' }),
          false,
        ),
      ),
      element('fieldset', {}, element('legend', {}, 'Your home'), ...form.questions.map(question)),
      element(
        'div',
        { class: 'field consent', 'data-field': 'consent' },
        element(
          'label',
          {},
          element('input', { type: 'checkbox', name: 'consent', value: 'yes' }),
          ' I agree that the shelter keeps and uses these details to handle my application (required).',
        ),
        element('p', { class: 'error', hidden: '' }),
      ),
      element('button', { type: 'submit' }, 'Send application'),
    );
    // One key per filled-in form: a retry of the same click is the same application.
    const idempotencyKey = newKey();
    formNode.addEventListener('submit', async (event) => {
      event.preventDefault();
      const button = formNode.querySelector('button[type="submit"]');
      button.disabled = true;
      document.body.dataset.state = 'loading';
      const application = collect(formNode, form.questions, pet.id);
      try {
        const response = await fetch('/api/applications', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify(application),
        });
        const answer = await response.json();
        if (response.ok) {
          container.replaceChildren(
            element(
              'div',
              { class: 'thanks', role: 'status', 'data-application-id': answer.id },
              element('h3', {}, 'Thank you! Your application has been sent.'),
              element(
                'p',
                {},
                `The shelter will review it and write to ${application.applicant.email}. Your reference: ${answer.id}.`,
              ),
            ),
          );
        } else showErrors(formNode, summary, answer);
      } catch {
        showErrors(formNode, summary, {
          message: 'The application could not be sent: is the connection down?',
        });
      }
      button.disabled = false;
      document.body.dataset.state = 'ready';
    });
    container.replaceChildren(formNode);
    document.body.dataset.state = 'ready';
  }

  window.ApplyForm = { open };
})();

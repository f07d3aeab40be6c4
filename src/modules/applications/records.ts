/** The rows the decisions read and write, as the stores map them. */
import type { Address, Answers, ApplicationStatus, HistoryEntry, Question } from './schemas.js';

export interface ApplicantRecord {
  seq: number;
  id: string;
  accountId: number;
  name: string | null;
  email: string | null;
  phone: string | null;
  address: Address | null;
  consentAt: number;
  createdAt: number;
  updatedAt: number;
  erasedAt: number | null;
}

export interface ApplicationRecord {
  seq: number;
  id: string;
  accountId: number;
  applicantSeq: number;
  applicantId: string;
  petId: number;
  /** null once the applicant is erased. */
  answers: Answers | null;
  formVersion: number;
  status: ApplicationStatus;
  statusReason: string | null;
  message: string | null;
  orderId: number | null;
  history: HistoryEntry[];
  version: number;
  createdAt: number;
  updatedAt: number;
}

export interface FormRecord {
  version: number;
  questions: Question[];
  updatedAt: number;
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Categories } from '../schemas.js';
import type { Storage } from '../storage/storage.js';
import { errorResponses } from './responses.js';

export const categoryRoutes: FastifyPluginAsyncTypebox<{ storage: Storage }> = async (app, { storage }) => {
  app.get(
    '/categories',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'listCategories',
        tags: ['categories'],
        summary: 'List categories (extension)',
        description:
          'An extension to the interface specification: the categories a pet may belong to (`categoryId`).',
        response: { 200: Categories, ...errorResponses(401) },
      },
    },
    () => storage.listCategories(),
  );
};

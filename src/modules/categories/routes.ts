import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../http/responses.js';
import { NoQuery } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { categoryRepository } from './repository.js';
import { Categories } from './schemas.js';

export const categoryRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (app, { database }) => {
  const categories = database.repository(categoryRepository);
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
        querystring: NoQuery,
        response: {
          200: { ...Categories, description: 'Every category, ordered by id.' },
          ...errorResponses(400, 401),
        },
      },
    },
    () => categories.list(),
  );
};

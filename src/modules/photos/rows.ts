/** A photo's row as both backends read it. */
export const PHOTO_COLUMNS = 'id, pet_id AS "petId", position, width, height, created_at AS "createdAt"';

import type { Access } from '../lib/types';

/** What each access means, in one line: the app page and the deploy form say it the same way. */
export const ACCESS_MEANS: Record<Access, string> = {
  public: 'Anyone with the URL can open it.',
  private:
    'Only the owner and admins (with their token) and visitors of a share link get in; ' +
    'anyone else gets 401.',
};

/** "Public" or "Private" as a word in a badge; the word carries the meaning. */
export function AccessBadge({ access }: { access: Access }) {
  return (
    <span class={`badge access-${access}`}>{access === 'private' ? 'Private' : 'Public'}</span>
  );
}

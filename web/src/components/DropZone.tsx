import { useState } from 'preact/hooks';
import { errorText } from '../lib/api';
import { filesOfEntry, filesOfInput, type FolderFiles, type LeftOut } from '../lib/folder';
import type { PackFile } from '../lib/tar';
import { Problem } from './Problem';

/** What was chosen: a folder's files (packed before upload) or a ready `.tar.gz`. */
export type Chosen =
  | { kind: 'folder'; name: string; files: PackFile[]; leftOut: LeftOut[] }
  | { kind: 'archive'; name: string; file: File };

/** A drop target for a folder or a `.tar.gz`, with two buttons that do the same by keyboard. */
export function DropZone({ onChosen }: { onChosen: (chosen: Chosen) => void }) {
  const [over, setOver] = useState(false);
  const [problem, setProblem] = useState<string>();

  /** A folder with nothing to upload is said so, rather than chosen. */
  const folder = (name: string, files: FolderFiles) => {
    if (files.files.length > 0) return onChosen({ kind: 'folder', name, ...files });
    setProblem(
      files.leftOut.length > 0
        ? `Nothing in ${name} would be uploaded: everything in it is left out (.git, node_modules, .gitignore, .slipwayignore).`
        : `${name ? `The folder ${name}` : 'That folder'} is empty: choose the folder that holds your app.`,
    );
  };

  const drop = async (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    setProblem(undefined);
    const item = event.dataTransfer?.items[0];
    const entry = item?.webkitGetAsEntry();
    try {
      if (entry?.isDirectory) {
        folder(entry.name, await filesOfEntry(entry as FileSystemDirectoryEntry));
        return;
      }
      const file = event.dataTransfer?.files[0];
      if (file && isArchive(file.name)) onChosen({ kind: 'archive', name: file.name, file });
      else setProblem('Drop a folder or a .tar.gz file.');
    } catch (err) {
      setProblem(`Could not read what was dropped: ${errorText(err)}`);
    }
  };

  return (
    <div
      class={over ? 'dropzone over' : 'dropzone'}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
    >
      <p>Drop a folder or a .tar.gz here, or choose one:</p>
      <div class="row">
        <label class="button">
          Choose a folder
          <input
            class="sr-only"
            type="file"
            data-testid="folder-input"
            // Chromium, Firefox and Safari all take the prefixed attribute.
            {...{ webkitdirectory: true }}
            multiple
            onChange={(e) => {
              const list = e.currentTarget.files;
              setProblem(undefined);
              // Browsers hand over no files at all for an empty folder, not even its name.
              if (!list || list.length === 0) return folder('', { files: [], leftOut: [] });
              filesOfInput(list).then(
                ({ root, ...files }) => folder(root, files),
                (err: unknown) => setProblem(`Could not read the folder: ${errorText(err)}`),
              );
            }}
          />
        </label>
        <label class="button">
          Choose a .tar.gz
          <input
            class="sr-only"
            type="file"
            data-testid="archive-input"
            accept=".tar.gz,.tgz,application/gzip"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) onChosen({ kind: 'archive', name: file.name, file });
            }}
          />
        </label>
      </div>
      <Problem text={problem} />
    </div>
  );
}

const isArchive = (name: string): boolean => /\.(tar\.gz|tgz)$/i.test(name);

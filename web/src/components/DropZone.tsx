import { useState } from 'preact/hooks';
import { errorText } from '../lib/api';
import { filesOfEntry, filesOfInput, type LeftOut } from '../lib/folder';
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

  const drop = async (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    setProblem(undefined);
    const item = event.dataTransfer?.items[0];
    const entry = item?.webkitGetAsEntry();
    try {
      if (entry?.isDirectory) {
        const folder = await filesOfEntry(entry as FileSystemDirectoryEntry);
        onChosen({ kind: 'folder', name: entry.name, ...folder });
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
              if (!list || list.length === 0) return;
              setProblem(undefined);
              filesOfInput(list).then(
                ({ root, ...folder }) => onChosen({ kind: 'folder', name: root, ...folder }),
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

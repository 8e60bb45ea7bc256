package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.store.PageStore;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a writable open checks before its first write: that this user may write the store. Page files are opened
 * when a page of theirs is first read, in the middle of recovery, after it cut the archive back to its checkpoint
 * mark; a page file or a directory it may not write (a store restored by another user, a file left read-only) then
 * stopped the open half-way. The archive's files and the WAL's segments are opened for writing before anything is
 * written already; the directories here are where recovery and the checkpoints create and delete files.
 */
final class WritableCheck {
    private WritableCheck() {
    }

    static void refuseUnwritable(FileIOFactory io, VarveConfig config) {
        Path pages = config.path().resolve("pages");
        List<Path> dirs = new ArrayList<>(List.of(config.path(), pages, config.path().resolve("wal"), config.path().resolve("checkpoints"),
                config.archivePath()));
        for (int level = 1; Files.isDirectory(config.archivePath().resolve("level-" + level)); level++)
            dirs.add(config.archivePath().resolve("level-" + level));
        for (Path d : dirs) {
            if (Files.isDirectory(d) && !Files.isWritable(d))
                throw new StorageException("this user may not create or delete files in the store's directory " + d
                        + ", which a writable open needs; give it write permission, or read the store with Varve.openReadOnly", d,
                        new AccessDeniedException(d.toString()));
        }
        if (!io.exists(pages)) return;
        try {
            for (Path p : io.list(pages, "")) {
                if (!PageStore.isPageFileName(p.getFileName().toString())) continue; // an operator's copy is not written
                try {
                    io.open(p, false).close(); // opened for writing and closed: the one check that tells what the writes will meet
                } catch (IOException e) {
                    throw new StorageException("cannot open page file " + p + " for writing"
                            + (e instanceof AccessDeniedException ? " (permission denied); give this user write permission on the store's "
                            + "files, or read the store with Varve.openReadOnly" : ": " + e.getMessage()), p, e);
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot list the page files", pages, e);
        }
    }
}

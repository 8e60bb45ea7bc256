package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;

import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a writable open checks before its first write: that this user may write the store's directories, where
 * recovery and the checkpoints create and delete files. A directory it may not write (a store restored by another
 * user) would otherwise stop the open half-way, after recovery cut the archive back to its checkpoint mark. The files
 * are opened for writing before anything is written already: the archive's and the WAL's segments by their checks,
 * every page file by the check of its store id and generation ({@code PageFileGenerations}).
 */
final class WritableCheck {
    private WritableCheck() {
    }

    static void refuseUnwritable(VarveConfig config) {
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
    }
}

package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.util.RealPaths;
import dev.varve.snapshot.SnapshotArchive;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Refuses a store directory or archive that lies inside another store's own files: its {@code pages/}, {@code wal/},
 * {@code checkpoints/} or archive. The configuration sees only this store's paths, so it cannot tell that
 * {@code archivePath} is another store's {@code wal/}; there this store's files would be taken for that store's
 * damage, or that store's for this one's, and a salvage, backup or drop of one would carry or delete the other's
 * files. Checked on the paths the file system resolves, before a writable open creates anything. Left alone: a store
 * in another's {@code .incoming/} (how a transfer builds one), and one beside another store's files in its top
 * directory, whose other entries nothing lists.
 */
final class NestedStoreCheck {
    /** A store's own directories: what marks a directory as a store's, and where no other store may lie. */
    private static final List<String> OWN = List.of("pages", "wal", "checkpoints");

    private NestedStoreCheck() {
    }

    static void refuse(VarveConfig config) {
        Path store = RealPaths.of(config.path());
        Path archive = RealPaths.of(config.archivePath());
        // a store's own archive is never its top directory (the configuration refuses that): these are another's
        if (SnapshotArchive.holdsArchive(store))
            throw new IllegalArgumentException("path " + config.path() + " is the snapshot archive of another store; give the store a directory of its own");
        if (!archive.equals(store) && isStore(archive))
            throw new IllegalArgumentException("archivePath " + config.archivePath() + " is the directory of another store (it holds its "
                    + String.join(", ", OWN) + " directories); give the archive a directory of its own");
        refuseInsideAnother("path", config.path(), store, store);
        refuseInsideAnother("archivePath", config.archivePath(), archive, store);
    }

    /**
     * Refuses {@code dir} (as the file system resolves it) inside a directory of a store other than {@code ownStore}.
     * An archive that is exactly another store's default one is left to {@link SnapshotArchive#refuseForeign}.
     */
    private static void refuseInsideAnother(String field, Path asGiven, Path dir, Path ownStore) {
        for (Path up = dir.getParent(); up != null; up = up.getParent()) {
            if (up.equals(ownStore)) continue;
            if (SnapshotArchive.holdsArchive(up))
                throw new IllegalArgumentException(field + " " + asGiven + " lies inside " + up + ", the snapshot archive of another store; "
                        + "give it a directory of its own");
            String first = up.relativize(dir).getName(0).toString();
            if (OWN.contains(first) && isStore(up))
                throw new IllegalArgumentException(field + " " + asGiven + " lies inside " + up.resolve(first) + ", a directory of the store in "
                        + up + "; give it a directory of its own");
        }
    }

    /** A store's directory: its lock file and one of its own directories (a web site's pages/ is not one). */
    private static boolean isStore(Path dir) {
        if (!Files.exists(dir.resolve(StoreLock.FILE))) return false;
        for (String own : OWN) if (Files.isDirectory(dir.resolve(own))) return true;
        return false;
    }
}

package dev.varve.benchmarks;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A JMH trial's store: opened in a new temporary directory, a table filled with keys [0, n) and checkpointed, so
 * measurement starts from resident data and a clean region; closing it deletes the directory.
 */
final class PreloadedStore implements AutoCloseable {
    private final Path dir;
    private final Varve store;

    private PreloadedStore(Path dir, Varve store) {
        this.dir = dir;
        this.store = store;
    }

    /**
     * Opens {@code config} (its path is set here) in a new directory named from {@code prefix} and fills {@code table}
     * with {@code keys} keys of {@code valueBytes}-byte values.
     */
    static PreloadedStore open(String prefix, VarveConfig.Builder config, String table, long keys, int valueBytes) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        Varve store = null;
        try {
            store = Varve.open(config.path(dir).build());
            Preload.keys(store, table, keys, valueBytes, 0);
            store.checkpoint().join();
            return new PreloadedStore(dir, store);
        } catch (RuntimeException | Error e) {
            try { // the store closed first, then its directory; a failure here rides on the one being thrown
                if (store != null) store.close();
                StoreDirs.delete(dir);
            } catch (IOException | RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    Varve store() {
        return store;
    }

    @Override
    public void close() throws IOException {
        try {
            store.close();
        } finally {
            StoreDirs.delete(dir);
        }
    }
}

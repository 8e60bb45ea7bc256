package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import dev.varve.engine.StoreInspector;
import picocli.CommandLine.Option;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where an existing store's layout comes from: detected from its files, or a properties file; and its archive. */
final class LayoutOptions {
    @Option(names = "--archive", paramLabel = "DIR", description = "The snapshot archive directory, when not DIR/archive.")
    Path archive;

    @Option(names = "--config", paramLabel = "FILE",
            description = "A varve.* properties file the store was configured with; by default the layout (page size, WAL segment size, "
                    + "rank levels, Skippy) is read from the files.")
    Path config;

    /** The archive directory of the store in {@code dir}. */
    Path archiveOf(Path dir) {
        return archive != null ? archive : dir.resolve("archive");
    }

    /** True when either option was given. */
    boolean given() {
        return archive != null || config != null;
    }

    /** The configuration to open the store in {@code dir} with; a directory that holds no store is unusable. */
    VarveConfig config(Path dir) {
        if (!Files.isDirectory(dir)) throw new UnusableStoreException(dir + " is not a directory", null);
        try {
            return detect(dir);
        } catch (IllegalArgumentException e) {
            if (config != null) throw e; // the properties file is at fault
            throw new UnusableStoreException(e.getMessage(), e);
        } catch (StorageException e) { // a store this user may not read
            throw new UnusableStoreException(e.getMessage(), e);
        }
    }

    private VarveConfig detect(Path dir) {
        if (config != null) {
            Main.requireFile("--config", config);
            VarveConfig.Builder b = VarveConfig.load(config, dir).toBuilder();
            if (archive != null) b.archivePath(archive);
            return b.build();
        }
        return StoreInspector.detectConfig(dir, archiveOf(dir));
    }
}

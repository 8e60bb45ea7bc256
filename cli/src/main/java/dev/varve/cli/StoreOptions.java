package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Varve;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Files;
import java.nio.file.Path;

/** The store a command reads: its directory, and where the layout comes from (detected, or a properties file). */
final class StoreOptions {
    @Parameters(index = "0", paramLabel = "DIR", description = "The store directory.")
    Path dir;

    @Option(names = "--archive", paramLabel = "DIR", description = "The snapshot archive directory, when not DIR/archive.")
    Path archive;

    @Option(names = "--config", paramLabel = "FILE",
            description = "A varve.* properties file the store was configured with; by default the layout (page size, WAL segment size, "
                    + "rank levels, Skippy) is read from the files.")
    Path config;

    /** The configuration to open the store with; a directory that holds no store is unusable. */
    VarveConfig config() {
        if (!Files.isDirectory(dir)) throw new UnusableStoreException(dir + " is not a directory", null);
        try {
            return detect();
        } catch (IllegalArgumentException e) {
            if (config != null) throw e; // the properties file is at fault
            throw new UnusableStoreException(e.getMessage(), e);
        }
    }

    private VarveConfig detect() {
        if (config != null) {
            VarveConfig.Builder b = VarveConfig.load(config).toBuilder().path(dir);
            if (archive != null) b.archivePath(archive);
            return b.build();
        }
        return StoreInspector.detectConfig(dir, archive != null ? archive : dir.resolve("archive"));
    }

    /** Opens the store read-only (recovered in memory if it crashed; nothing on disk changes). */
    Varve openReadOnly() {
        VarveConfig c = config();
        try {
            return Varve.openReadOnly(c);
        } catch (RuntimeException e) {
            throw new UnusableStoreException("cannot open " + dir + " read-only: " + Main.describe(e), e);
        }
    }
}

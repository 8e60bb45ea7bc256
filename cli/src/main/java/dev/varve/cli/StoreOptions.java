package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;

/** The store a command reads: its directory, and where the layout comes from (detected, or a properties file). */
final class StoreOptions {
    @Parameters(index = "0", paramLabel = "DIR", description = "The store directory.")
    Path dir;

    @Mixin
    LayoutOptions layout;

    /** The configuration to open the store with; a directory that holds no store is unusable. */
    VarveConfig config() {
        return layout.config(dir);
    }

    /** Opens the store read-only (recovered in memory if it crashed; nothing on disk changes). */
    Varve openReadOnly() {
        return openReadOnly(dir, layout);
    }

    /** Opens the store in {@code dir} read-only, its layout found as {@code layout} says. */
    static Varve openReadOnly(Path dir, LayoutOptions layout) {
        VarveConfig c = layout.config(dir);
        try {
            return Varve.openReadOnly(c);
        } catch (RuntimeException e) {
            throw new UnusableStoreException("cannot open " + dir + " read-only: " + Main.describe(e), e);
        }
    }
}

package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.store.StoreTag;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.function.Function;

import static dev.varve.engine.PageFileGenerationTest.assertSame;
import static dev.varve.engine.PageFileGenerationTest.contents;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One of a store's archive files swapped for another store's of the same name and shape: open and the read-only open
 * must refuse it, naming the file, this store's id and the other's tag, {@code verify} must report it, and none of them
 * may change a file. The store's own file then goes back, for the caller to check that the store reads right again.
 */
final class ForeignFileSwap {
    private ForeignFileSwap() {
    }

    /**
     * @param store     the store whose file is swapped
     * @param target    its file
     * @param foreign   the other store's file of that name
     * @param foreignId the other store's id
     * @param what      the refusal's words for the kind of file ("ranked extent" in "ranked extent belongs to another store")
     * @param keep      where the store's own file is kept meanwhile
     */
    static void assertRefused(Path store, Path target, Path foreign, long foreignId, String what, Function<Path, VarveConfig> config, Path keep)
            throws IOException {
        Files.copy(target, keep);
        Files.copy(foreign, target, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(store);
        String id = String.format("%016x", WalForeignSegmentTest.storeId(store));

        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config.apply(store)).close());
        assertTrue(e.getMessage().contains(target.getFileName().toString()) && e.getMessage().contains(what + " belongs to another store")
                && e.getMessage().contains(id) && e.getMessage().contains(String.format("%08x", StoreTag.of(foreignId))), e.getMessage());
        assertSame(before, contents(store));
        assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config.apply(store)).close());
        assertTrue(StoreVerifier.verify(config.apply(store)).damage().stream()
                        .anyMatch(d -> d.file().equals(target) && d.what().contains("belongs to another store") && d.what().contains(id)),
                () -> StoreVerifier.verify(config.apply(store)).damage().toString());
        assertSame(before, contents(store));
        Files.copy(keep, target, StandardCopyOption.REPLACE_EXISTING);
    }
}

package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store this user may not read is named as that, not as a directory that "holds no Varve store": the operator of
 * a tool run as the wrong user was sent looking for a store that was there. The check runs in a child JVM without
 * the right to bypass file permissions — a test run as root (which may read anything) starts it through
 * {@code setpriv} with {@code CAP_DAC_OVERRIDE} and {@code CAP_DAC_READ_SEARCH} dropped, so the store directory's
 * mode 000 applies to it as to any other user.
 */
@Timeout(120)
class UnreadableStoreTest {
    /** Exit code of the child once it has tried every open. */
    private static final int TRIED = 3;

    @TempDir
    Path tmp;

    /** The child: each way of opening the store without creating one, and what it threw. */
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        List<Runnable> opens = List.of(() -> StoreInspector.detectConfig(dir), () -> Varve.openReadOnly(VarveConfig.builder().path(dir)
                .dataRegionSize(32L << 20).checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build()).close(),
                () -> StoreInspector.requireStore(dir, ""));
        for (Runnable open : opens) {
            try {
                open.run();
                System.out.println("OPENED");
            } catch (RuntimeException e) {
                System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        System.exit(TRIED);
    }

    @Test
    void aStoreThisUserMayNotReadIsNamedAsThat() throws IOException {
        Path store = tmp.resolve("store");
        try (Varve v = Varve.open(VarveConfig.builder().path(store).dataRegionSize(16L << 20)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build())) {
            v.table("t").put("k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        }
        List<String> launcher = new ArrayList<>();
        if ("root".equals(System.getProperty("user.name"))) {
            Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "running as root, and no setpriv to drop the file-permission bypass");
            launcher.addAll(List.of("/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"));
        }
        Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("---------"));
        try {
            FixtureChildJvm.Result r = FixtureChildJvm.run(launcher, "-Xmx128m", 90, UnreadableStoreTest.class, store.toString());
            Assumptions.assumeFalse(r.output().startsWith("setpriv: "), "setpriv may not drop capabilities here: " + r.output());
            assertEquals(TRIED, r.exitCode(), r.describe());
            String[] lines = r.output().lines().filter(l -> l.startsWith("OPENED") || l.contains("Exception: ")).toArray(String[]::new);
            assertEquals(3, lines.length, r.describe());
            for (String line : lines) {
                assertTrue(line.startsWith("StorageException: cannot read " + store) && line.contains("permission denied"), line + "\n" + r.describe());
                assertFalse(line.contains("holds no Varve store"), line);
            }
        } finally {
            Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rwx------"));
        }
        // readable again, it is the store it was
        try (Varve v = Varve.openReadOnly(StoreInspector.detectConfig(store))) {
            assertEquals("v", new String(v.table("t").get("k".getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8));
        }
    }
}

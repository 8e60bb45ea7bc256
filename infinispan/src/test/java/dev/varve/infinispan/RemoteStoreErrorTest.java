package dev.varve.infinispan;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.tree.CorruptTreeException;
import org.infinispan.marshall.exts.ThrowableExternalizer;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A store's failure on one node reaches the caller on another as Infinispan marshals exceptions between nodes (its
 * {@link ThrowableExternalizer}: class name, message, cause, rebuilt through the class's (message, cause) constructor).
 * Without that constructor the answer could not be rebuilt and the remote caller waited out its timeout instead of
 * learning the disk was full.
 */
class RemoteStoreErrorTest {
    private static Throwable roundTrip(Throwable t) throws IOException, ClassNotFoundException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            ThrowableExternalizer.INSTANCE.writeObject(out, t);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return ThrowableExternalizer.INSTANCE.readObject(in);
        }
    }

    @Test
    void aStoresFailureCrossesToAnotherNodeWithItsMessage() throws Exception {
        StorageException full = new StorageException("cannot create WAL segment 1: No space left on device", Path.of("/data/c/wal/x.seg"));
        Throwable back = roundTrip(full);
        assertEquals(StorageException.class, back.getClass(), String.valueOf(back));
        assertEquals(full.getMessage(), back.getMessage());
        CorruptionException damaged = new CorruptionException("bad page CRC", Path.of("/data/c/pages/t00001-p00000.page"), 8192);
        Throwable back2 = roundTrip(damaged);
        assertTrue(back2 instanceof StorageException, String.valueOf(back2));
        assertEquals(damaged.getMessage(), back2.getMessage());
        StorageException withCause = new StorageException("cannot force WAL segment 3", Path.of("/data/c/wal"), new java.io.IOException("No space left on device"));
        Throwable back3 = roundTrip(withCause);
        assertEquals(StorageException.class, back3.getClass(), String.valueOf(back3));
        assertEquals(withCause.getMessage(), back3.getMessage());
        assertEquals("No space left on device", back3.getCause().getMessage());
        Throwable tree = roundTrip(new CorruptTreeException("keys out of order", 5L));
        assertTrue(tree instanceof CorruptTreeException && tree.getMessage().contains("keys out of order"), String.valueOf(tree));
    }
}

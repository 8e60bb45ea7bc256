package dev.varve.core.util;

/**
 * Tells a store's threads and log lines apart from another store's in the same JVM. While a store opens
 * ({@link #opening}), the opening thread's name carries the store's name — so what recovery logs says which store
 * it is about — and every background thread started for the store takes {@link #suffix()} into its name.
 */
public final class StoreThreads {
    private static final InheritableThreadLocal<String> STORE = new InheritableThreadLocal<>();

    private StoreThreads() {
    }

    /** Marks the current thread as opening store {@code name} until the returned scope is closed. */
    public static Scope opening(String name) {
        Thread t = Thread.currentThread();
        String previousName = t.getName();
        String previousStore = STORE.get();
        STORE.set(name);
        t.setName(previousName + " [varve " + name + "]");
        return () -> {
            t.setName(previousName);
            if (previousStore == null) STORE.remove();
            else STORE.set(previousStore);
        };
    }

    /** " [store name]" while a store opens on this thread (or one it started), else "". Take it when creating a thread's factory or the thread. */
    public static String suffix() {
        String s = STORE.get();
        return s == null ? "" : " [" + s + "]";
    }

    /** The end of an {@link #opening} scope. */
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}

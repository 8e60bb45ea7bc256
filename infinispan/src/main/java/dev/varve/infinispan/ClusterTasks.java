package dev.varve.infinispan;

import org.infinispan.manager.ClusterExecutor;
import org.infinispan.manager.EmbeddedCacheManager;
import org.infinispan.remoting.transport.Address;
import org.infinispan.util.function.SerializableFunction;

import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs one of Varve's tasks on nodes of a cluster through Infinispan's cluster executor and gathers the answers. */
final class ClusterTasks {
    private ClusterTasks() {
    }

    /**
     * Runs {@code task} on {@code targets} (every node when null) and returns each node's answer, or fails naming the
     * nodes where it failed. A manager that is not clustered answers alone, under the address null.
     */
    static <T> Map<Address, T> run(EmbeddedCacheManager manager, Collection<Address> targets, long timeoutSeconds,
                                   SerializableFunction<EmbeddedCacheManager, T> task, String what) {
        Map<Address, T> results = Collections.synchronizedMap(new HashMap<>());
        Map<Address, Throwable> failures = Collections.synchronizedMap(new HashMap<>());
        ClusterExecutor executor = manager.executor().timeout(timeoutSeconds, TimeUnit.SECONDS);
        if (targets != null) executor = executor.filterTargets(targets);
        executor.submitConsumer(task, (address, result, error) -> {
            if (error != null) failures.put(address, error);
            else results.put(address, result);
        }).join();
        if (!failures.isEmpty()) {
            IllegalStateException e = new IllegalStateException(what + " failed on " + failures.keySet() + ": " + failures);
            failures.values().forEach(e::addSuppressed);
            throw e;
        }
        return results;
    }
}

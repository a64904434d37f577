import org.hvd.Hvd;
import org.hvd.ReduceOp;

/** Built and run against the installed hvd.jar (CLASSPATH) with no -Djava.library.path. */
public class Consumer {
  public static void main(String[] args) {
    Hvd.init();
    int rank = Hvd.rank(), size = Hvd.size();
    float[] sum = Hvd.allreduce(new float[] {rank + 1, 10 * (rank + 1)}, ReduceOp.SUM);
    float want = size * (size + 1) / 2f;
    if (sum[0] != want || sum[1] != 10 * want) {
      throw new AssertionError("rank " + rank + ": got " + sum[0] + " " + sum[1] + ", want " + want);
    }
    Hvd.shutdown();
    System.out.println("rank " + rank + " of " + size + ": java ok");
  }
}

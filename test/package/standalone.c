/* Links against the installed engine (ubermatch_engine.h, -lubermatch) and
 * matches one message: the package's standalone use works. */
#include <stdio.h>
#include <ubermatch_engine.h>

int main(void)
{
    um_params_t params;
    um_params_init(&params);
    char err[256];
    um_engine_t *engine = um_engine_create("list", 2, &params, err, sizeof err);
    if (!engine) {
        fprintf(stderr, "um_engine_create: %s\n", err);
        return 1;
    }
    int request = 0, message = 0;
    um_match_t out;
    int ok = um_engine_post_recv(engine, 1, 7, NULL, &request, &out) == 0 && out.handle == NULL &&
             um_engine_arrive(engine, 1, 7, NULL, &message, &out) == 0 && out.handle == &request;
    printf("standalone engine (%s): %s\n", um_engine_backend(engine), ok ? "matched" : "NO MATCH");
    um_engine_destroy(engine);
    return ok ? 0 : 1;
}

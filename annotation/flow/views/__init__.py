"""The annotation app's pages: studies (staff), the annotator flow (Prolific participants), agreement (staff),
and the pages that read judge and human critical failures together (failure browser, generation page)."""
